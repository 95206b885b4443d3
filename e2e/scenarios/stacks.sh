# Storage stacks built inside keel's test guest, shared by the smoke tests
# (e2e/smoke) and the fixture captures (e2e/capture-fixtures.sh). Source it
# after lib.sh; every function stops at the first failing command and
# returns its status. Sizes suit the capture disks: NVMe 64G, HDD 128G, SSD 16G.

# The VDO article's thread layout and discard size for lvcreate --vdosettings.
VDO_ARTICLE_SETTINGS="logical_threads=4 physical_threads=4 hash_zone_threads=2 cpu_threads=3 bio_threads=2 ack_threads=1 max_discard=4096"
# The global_filter the article uses to keep LVM out of Proxmox VM disks.
PVE_FILTER='r|/dev/mapper/.*-(vm|base)--[0-9]+--disk--[0-9]+|'

# lvm_conf_save keeps trixie's stock lvm.conf once; lvm_conf_reset restores it.
lvm_conf_save() { [ -e /etc/lvm/lvm.conf.stock ] || cp /etc/lvm/lvm.conf /etc/lvm/lvm.conf.stock; }
lvm_conf_reset() { lvm_conf_save && cp /etc/lvm/lvm.conf.stock /etc/lvm/lvm.conf; }

# lvm_conf_article turns scan_lvs on and adds the Proxmox VM-disk filter, as
# keel generates it: rejects only, since an accept-all after them would accept
# each VM disk by its /dev/dm-N name (LVM's alias rule).
lvm_conf_article() {
	lvm_conf_save || return
	printf '\ndevices {\n\tscan_lvs = 1\n\tglobal_filter = [ "%s" ]\n}\n' "$PVE_FILTER" >>/etc/lvm/lvm.conf
}

# stack_vdo_thick NVME [PVCREATE_ARG...]: the article's lab. VG vdolab on the
# NVMe, a 40G VDO pool (35G virtual) with the article's threads, lvm.conf
# with scan_lvs=1, and VG vdovg on the VDO LV (its pvcreate given the extra
# arguments) holding vm-100-disk-0.
stack_vdo_thick() {
	local nvme=$1
	shift
	step pvcreate -q "$nvme" &&
		step vgcreate -q vdolab "$nvme" &&
		step lvcreate -y --type vdo -L 40G -V 35G -n vdolv vdolab/vdopool --vdosettings "$VDO_ARTICLE_SETTINGS" &&
		lvm_conf_article &&
		step pvcreate -q "$@" /dev/vdolab/vdolv &&
		step vgcreate -q vdovg /dev/vdolab/vdolv &&
		step lvcreate -y -q -L 4G -n vm-100-disk-0 vdovg
}

# stack_vdo_defaults NVME: a VDO pool with LVM's defaults (10 threads,
# maxDiscard 1); scan_lvs stays 0.
stack_vdo_defaults() {
	local nvme=$1
	step pvcreate -q "$nvme" &&
		step vgcreate -q vdodef "$nvme" &&
		step lvcreate -y --type vdo -L 20G -V 40G -n vdolv vdodef/vdopool
}

# stack_vdo_split FAST SLOW [VG]: a pool LV with its head on FAST, middle on
# SLOW and tail on FAST, converted to a VDO pool. The recovery journal sits
# at the end of the data, on the FAST tail.
stack_vdo_split() {
	local fast=$1 slow=$2 vg=${3:-vdosplit}
	step pvcreate -q "$fast" "$slow" &&
		step vgcreate -q "$vg" "$fast" "$slow" &&
		step lvcreate -y -q -n pool -L 4G "$vg" "$fast" &&
		step lvextend -q -L +8G "$vg/pool" "$slow" &&
		step lvextend -q -L +1G "$vg/pool" "$fast" &&
		step lvconvert -y --type vdo-pool -n vdolv -V 30G "$vg/pool" --vdosettings "$VDO_ARTICLE_SETTINGS"
}

# vdo_split_report VG: segments, data table and VDO metadata layout of a split pool.
vdo_split_report() {
	local vg=${1:-vdosplit}
	lvs -a --segments -o lv_name,seg_start_pe,seg_size_pe,devices "$vg"
	dmsetup table "$vg-pool_vdata"
	vdolistmetadata "/dev/mapper/$vg-pool_vdata" | grep -v -e 'slab [0-9]* reference' -e 'slab [0-9]* journal'
}

# stack_thin NVME: thin pool tp (512K chunks, zeroing off, 128M metadata)
# with one thin LV holding some data, and pool tpbad (8M chunks, zeroing on).
stack_thin() {
	local nvme=$1
	step pvcreate -q "$nvme" &&
		step vgcreate -q thinvg "$nvme" &&
		step lvcreate -y --type thin-pool --chunksize 512k -Z n --poolmetadatasize 128M -L 8G -n tp thinvg &&
		step lvcreate -y -V 20G -n vm-101-disk-0 --thinpool tp thinvg &&
		step dd if=/dev/urandom of=/dev/thinvg/vm-101-disk-0 bs=1M count=64 oflag=direct status=none &&
		step lvcreate -y --type thin-pool --chunksize 8M -Z y -L 4G -n tpbad thinvg
}

# bcache_cset SSD prints the cache set UUID of a bcache cache device.
bcache_cset() { bcache-super-show "$1" | awk '$1=="cset.uuid"{print $2}'; }

# stack_bcache SSD HDD: a cache on SSD, a backing device on HDD, attached.
stack_bcache() {
	local ssd=$1 hdd=$2 i
	step make-bcache -C "$ssd" >/dev/null && step make-bcache -B "$hdd" >/dev/null || return
	udevadm settle
	for i in $(seq 50); do [ -e /sys/block/bcache0/bcache ] && break; sleep 0.1; done
	[ -e /sys/block/bcache0/bcache ] || { echo "bcache0 did not appear" >&2; return 1; }
	echo "$(bcache_cset "$ssd")" >/sys/block/bcache0/bcache/attach
}

# bcache_tunables SSD: the article's tunables on bcache0 and its cache set.
bcache_tunables() {
	local cset
	cset=$(bcache_cset "$1")
	echo 0 >/sys/block/bcache0/bcache/sequential_cutoff &&
		echo 40 >/sys/block/bcache0/bcache/writeback_percent &&
		echo 81920 >/sys/block/bcache0/bcache/writeback_rate &&
		echo 20480 >/sys/block/bcache0/bcache/writeback_rate_minimum &&
		echo 0 >"/sys/fs/bcache/$cset/congested_read_threshold_us" &&
		echo 0 >"/sys/fs/bcache/$cset/congested_write_threshold_us" &&
		echo writeback >/sys/block/bcache0/bcache/cache_mode
}

# bcache_show SSD prints the tunables as name=value lines.
bcache_show() {
	local cset f
	cset=$(bcache_cset "$1")
	for f in sequential_cutoff writeback_percent writeback_rate writeback_rate_minimum cache_mode state; do
		echo "$f=$(cat /sys/block/bcache0/bcache/$f)"
	done
	for f in congested_read_threshold_us congested_write_threshold_us; do
		echo "$f=$(cat "/sys/fs/bcache/$cset/$f")"
	done
}

# bcache_register DEV: registers DEV with the kernel unless it already is
# (udev's bcache rule can register a device as soon as it is released).
bcache_register() {
	local dev
	dev=$(readlink -f "$1")
	echo "$dev" >/sys/fs/bcache/register 2>/dev/null && return 0
	[ -e "/sys/block/${dev##*/}/bcache" ]
}

# bcache_ino prints the sysfs inode of bcache0's bcache directory, or nothing
# when there is no bcache0 (never a failure: callers run under set -e).
# kernfs gives a new device a new inode, so a changed number proves the
# device was torn down and registered again (the name bcache0 alone does not).
bcache_ino() { stat -c %i /sys/block/bcache0/bcache 2>/dev/null || true; }

# bcache_reregister SSD HDD: stop bcache0 and its cache set, then register
# both again, which resets the tunables as a reboot does. It returns only once
# bcache0 is a new device: the stop is asynchronous and, under TCG, can take
# seconds; registering while the old device is still going away gets EBUSY,
# and then the old bcache0 could pass for the new one until it vanished.
#
# As at shutdown, the cache set is stopped, not unregistered, and only once
# bcache0 is gone: unregistering a cache set detaches its backing devices and
# first writes back their dirty data (Documentation/ABI/testing/
# sysfs-block-bcache, "unregister"; "stop" in admin-guide/bcache.rst keeps
# the cache). When bcache0 does not go within 30 s (with the old order it
# could stay far longer: docs/testing.md), the kernel's blocked tasks
# are dumped to dmesg (sysrq w), which a failed test keeps (KEEL_E2E_KEEP).
bcache_reregister() {
	local ssd=$1 hdd=$2 cset old i
	cset=$(bcache_cset "$ssd")
	old=$(bcache_ino)
	echo 1 >/sys/block/bcache0/bcache/stop
	for i in $(seq 300); do
		[ "$(bcache_ino)" != "$old" ] && break
		sleep 0.1
	done
	if [ -n "$(bcache_ino)" ] && [ "$(bcache_ino)" = "$old" ]; then
		echo "bcache_reregister: bcache0 still there 30 s after its stop; blocked tasks in dmesg" >&2
		echo w >/proc/sysrq-trigger 2>/dev/null || true
	fi
	[ -e "/sys/fs/bcache/$cset/stop" ] && echo 1 >"/sys/fs/bcache/$cset/stop"
	for i in $(seq 300); do
		[ -e "/sys/fs/bcache/$cset" ] || break
		sleep 0.1
	done
	# Releasing the devices makes udev probe them again, and bcache-tools'
	# rule may register them before we do: then register says EBUSY.
	udevadm settle
	for i in $(seq 300); do
		local now
		now=$(bcache_ino)
		[ -n "$now" ] && [ "$now" != "$old" ] && return 0
		if [ $((i % 10)) = 1 ]; then
			# EBUSY while the old cache set still goes away: try again.
			bcache_register "$ssd" || true
			bcache_register "$hdd" || true
			udevadm settle || true
		fi
		sleep 0.1
	done
	echo "bcache_reregister: no new bcache0 after 30 s (old inode $old, now '$(bcache_ino)')" >&2
	return 1
}

# stack_teardown DISK...: removes every VG and bcache device and wipes the
# disks, so the next stack starts from blank disks and the stock lvm.conf.
stack_teardown() {
	local vg d cset
	# A VG whose PV is an LV must go before that LV: repeat until none is left.
	for _ in 1 2 3; do
		for vg in $(vgs --noheadings -o vg_name 2>/dev/null); do
			vgremove -ff -y "$vg" >/dev/null 2>&1 || true
		done
	done
	for d in /sys/block/bcache*/bcache/stop; do [ -e "$d" ] && echo 1 >"$d"; done
	for cset in /sys/fs/bcache/*-*; do [ -e "$cset/unregister" ] && echo 1 >"$cset/unregister"; done
	sleep 0.5
	for d in "$@"; do
		pvremove -ff -y "$d" >/dev/null 2>&1 || true
		wipefs -aq "$d"
		blkdiscard -f "$d" 2>/dev/null || true
	done
	lvm_conf_reset
	udevadm settle
}
