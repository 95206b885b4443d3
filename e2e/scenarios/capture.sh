# Guest side of e2e/capture-fixtures.sh: builds each requested stack in
# turn on blank disks, records one keel probe pass of it with
# `keel snapshot`, and tears it down. Scenario names come from
# /mnt/host/scenarios.txt; snapshots go to $OUT/<name>.txtar. Extra
# evidence (vdolistmetadata, dm tables) goes to this log, not the snapshot.
set -uo pipefail
. /mnt/host/stacks.sh
. /mnt/host/scale.sh

nv=$(disk nvme0) || exit 2
hd=$(disk hdd1) || exit 2
ssd=$(disk ssd2) || exit 2
all_disks=("$nv" "$hd" "$ssd")
lvm_conf_save
failed=0

snap() {
	local name=$1
	echo "-- snapshot $name"
	if ! "$KEEL" snapshot -o "$OUT/$name.txtar"; then
		echo "capture: keel snapshot $name failed" >&2
		failed=1
	fi
	ls -l "$OUT/$name.txtar" 2>/dev/null
}

# run_scenario NAME: build, snapshot (some scenarios several times), tear down.
run_scenario() {
	local name=$1
	echo "==== scenario $name"
	case $name in
	empty)
		snap empty
		;;
	vdo-thick)
		stack_vdo_thick "$nv" || return
		dmsetup table
		snap vdo-thick
		;;
	vdo-defaults)
		stack_vdo_defaults "$nv" || return
		dmsetup table
		snap vdo-defaults
		;;
	vdo-split)
		stack_vdo_split "$nv" "$hd" || return
		vdo_split_report
		snap vdo-split
		# Grow onto the HDD: the journal moves to the HDD.
		step lvextend -L +4G vdosplit/pool "$hd" || return
		vdo_split_report
		snap vdo-split-grown
		# Grow by a whole slab on the NVMe: the journal comes back.
		step lvextend -L +2G vdosplit/pool "$nv" || return
		vdo_split_report
		snap vdo-split-regrown
		;;
	thin)
		stack_thin "$nv" || return
		lvs -a -o lv_name,chunk_size,zero,discards,data_percent,metadata_percent thinvg
		snap thin
		;;
	bcache)
		stack_bcache "$ssd" "$hd" || return
		bcache_tunables "$ssd" || return
		bcache_show "$ssd"
		snap bcache
		bcache_reregister "$ssd" "$hd" || return
		bcache_show "$ssd"
		snap bcache-defaults
		;;
	vdo-on-bcache)
		stack_bcache "$ssd" "$hd" || return
		bcache_tunables "$ssd" || return
		lvm_conf_article || return
		stack_vdo_split "$nv" /dev/bcache0 || return
		vdo_split_report
		step pvcreate -q /dev/vdosplit/vdolv && step vgcreate -q vdovg /dev/vdosplit/vdolv &&
			step lvcreate -y -q -L 4G -n vm-100-disk-0 vdovg || return
		snap vdo-on-bcache
		;;
	pve)
		stack_vdo_thick "$nv" || return
		mkdir -p /etc/pve
		# The operator's file: an lvm storage on vdovg without saferemove.
		cat >/etc/pve/storage.cfg <<'CFG'
dir: local
	path /var/lib/vz
	content iso,vztmpl,backup

lvm: vdostore
	vgname vdovg
	content images,rootdir
	shared 0
CFG
		snap pve
		rm -rf /etc/pve
		;;
	thin-inactive)
		# The thin stack with its VG deactivated: declared pools inactive.
		stack_thin "$nv" || return
		step vgchange -an thinvg || return
		lvs -a -o lv_name,lv_active,lv_attr thinvg
		snap thin-inactive
		;;
	thin-vdodata)
		# A thin pool whose data LV is a VDO LV (lvm2 2.03.24, lvcreate
		# --pooldatavdo y): LVM's own thin-on-VDO layout, pool_tdata a VDO
		# LV on the hidden pool_vpool, in one VG.
		step pvcreate -q "$nv" && step vgcreate -q tvdo "$nv" || return
		step lvcreate -y --type thin-pool --pooldatavdo y -L 10G --chunksize 512k -Z n -n tpv tvdo || return
		step lvcreate -y -V 20G -n vm-102-disk-0 --thinpool tpv tvdo || return
		step dd if=/dev/urandom of=/dev/tvdo/vm-102-disk-0 bs=1M count=64 oflag=direct status=none || return
		lvs -a -o lv_name,segtype,lv_size,pool_lv,data_lv,lv_attr tvdo
		dmsetup table
		snap thin-vdodata
		;;
	vdo-nodedupe)
		# The article's lab with deduplication turned off on the pool.
		stack_vdo_thick "$nv" || return
		step lvchange --deduplication n vdolab/vdopool || return
		dmsetup table vdolab-vdopool-vpool
		snap vdo-nodedupe
		;;
	devices-file)
		# Blank disks, lvm.conf with the devices file turned on.
		printf '\ndevices {\n\tuse_devicesfile = 1\n}\n' >>/etc/lvm/lvm.conf || return
		lvmconfig --typeconfig full devices/use_devicesfile
		snap devices-file
		;;
	bcache-detached)
		# The article's bcache, then its cache set detached: bcache0 runs
		# without a cache ("no cache").
		stack_bcache "$ssd" "$hd" || return
		bcache_tunables "$ssd" || return
		echo 1 >/sys/block/bcache0/bcache/detach || return
		local i
		for i in $(seq 100); do [ "$(cat /sys/block/bcache0/bcache/state)" = "no cache" ] && break; sleep 0.1; done
		bcache_show "$ssd"
		[ "$(cat /sys/block/bcache0/bcache/state)" = "no cache" ] || return
		snap bcache-detached
		;;
	vg-incomplete)
		# VG incvg on the NVMe and the HDD, an LV on the NVMe only; then the
		# kernel deletes the HDD (SCSI delete, as a pulled disk): the VG is
		# partial. Last in a capture: hdd1 is gone for the rest of the boot.
		step pvcreate -q "$nv" "$hd" && step vgcreate -q incvg "$nv" "$hd" &&
			step lvcreate -y -q -L 1G -n lv0 incvg "$nv" || return
		local sd
		sd=$(basename "$(readlink -f "$hd")")
		echo 1 >"/sys/block/$sd/device/delete" || return
		udevadm settle
		vgs -o vg_name,vg_attr,pv_count,vg_missing_pv_count incvg
		snap vg-incomplete
		;;
	scale-thin | scale-vdo)
		# 2,000 VM disks, 50 of them active (e2e/scenarios/scale.sh): in a
		# thin pool, or on a VG stacked on the article's VDO LV.
		local t0=$SECONDS
		if [ "$name" = scale-thin ]; then
			scale_thin "$nv" thinscale 2000 50 || return
		else
			# First ~50 LVs (scale-vdo-50, all active), then grown to 2,000.
			stack_vdo_thick "$nv" --metadatasize "$SCALE_MDA" && scale_linear vdovg 48 48 || return
			snap scale-vdo-50
			t0=$SECONDS
			scale_linear vdovg 2000 50 || return
		fi
		echo "scale-build $name $((SECONDS - t0)) s"
		lvs --noheadings -o lv_active 2>/dev/null | sort | uniq -c
		snap "$name"
		;;
	*)
		echo "capture: unknown scenario $name" >&2
		return 2
		;;
	esac
}

for name in $(cat /mnt/host/scenarios.txt); do
	if ! run_scenario "$name"; then
		echo "capture: scenario $name failed" >&2
		failed=1
	fi
	stack_teardown "${all_disks[@]}"
done
exit $failed
