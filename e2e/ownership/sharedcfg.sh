#!/usr/bin/env bash
# Shared storage fails closed, in one boot of the test guest. Each section
# holds an inactive LV with data, declared absent, in a VG that other nodes
# may use (the VM runs there):
#
#  1. the boot window of a Proxmox VE node: pve-manager is installed (its
#     dpkg file list exists) and /etc/pve is an empty directory, as before
#     pve-cluster's pmxcfs mounts it or while pve-cluster restarts, so
#     storage.cfg does not exist. keel check reports why the LV is held
#     (lv.absent_shared, pve.storage_cfg_unreadable) and keel apply keeps it,
#     checksum intact.
#  2. no Proxmox VE at all, the VG declared shared (a SAN several libvirt
#     hosts see): kept and reported the same way.
#  3. storage.cfg at the path proxmox.storageConfig names, its storage
#     "shared 1": kept and reported, naming the Proxmox storage.
#
# Run from the repository root with a static keel binary:
#   CGO_ENABLED=0 go build -o /tmp/keel ./cmd/keel
#   go test -tags e2e -run TestWipeSharedCfg ./e2e/wipe/
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
O=$OUT/sharedcfg
mkdir -p "$O"
versions >"$O/versions.txt" 2>&1
. "$SHARE/wipelib.sh"
sum() { # the LV's checksum, read with it active, leaving it inactive
	lvchange -q -ay "$1" && sha256sum "/dev/$1" | cut -d' ' -f1
	lvchange -q -an "$1"
}
mkdir -p /etc/keel
chmod 755 /etc/keel
for f in window declared custom; do
	install -m 0644 "$SHARE/sharedcfg-$f.cue" "/etc/keel-$f.cue"
done

# vmdisk VG LV: an inactive 16M LV full of random bytes; its checksum in SUM.
vmdisk() {
	must lvcreate -q -y -L 16M -n "$2" "$1"
	must dd if=/dev/urandom of="/dev/$1/$2" bs=1M count=16 oflag=direct status=none
	sync
	SUM=$(sum "$1/$2")
}

# held NAME LV CFG WANT...: keel check reports lv.absent_shared for LV and
# each WANT, keel apply keeps LV with its checksum.
held() {
	local name=$1 lv=$2 cfg=$3 want=$4 out rc=0 bad=""
	shift 4
	out=$("$KEEL" check -c "$cfg" 2>&1) || rc=$?
	echo "$out" | sed 's/^/    check: /'
	[ "$rc" -eq 1 ] || bad="check rc $rc, want 1;"
	grep -q "lv.absent_shared  *$lv" <<<"$out" || bad="$bad no lv.absent_shared $lv;"
	for w in "$@"; do
		grep -q -- "$w" <<<"$out" || bad="$bad check lacks '$w';"
	done
	rc=0
	out=$("$KEEL" apply -c "$cfg" 2>&1) || rc=$?
	echo "$out" | sed 's/^/    apply: /'
	echo "    keel apply rc $rc"
	if ! exists "$lv" && ! exists "${lv%/*}/del-${lv#*/}"; then
		fail "$name: keel apply removed $lv"
		return
	fi
	exists "$lv" || bad="$bad $lv renamed;"
	[ "$(sum "$lv")" = "$want" ] || bad="$bad data of $lv changed;"
	if [ -n "$bad" ]; then
		fail "$name: $bad"
	else
		ok "$name: $lv kept, checksum intact, keel check says why"
	fi
}

# --- 1. a Proxmox VE node before pmxcfs mounts /etc/pve ----------------------
must pvcreate -q "$(disk sh1)"
must vgcreate -q pvesan "$(disk sh1)"
vmdisk pvesan vm-201-disk-0
s1=$SUM
mkdir -p /etc/pve /var/lib/dpkg/info
# dpkg's record that pve-manager is installed: the list of its files.
printf '/.\n/usr\n/usr/bin\n/usr/bin/pveversion\n' >/var/lib/dpkg/info/pve-manager.list
"$KEEL" snapshot -o "$O/sharedcfg-window.txtar" || echo "note: keel snapshot (window) failed"
held "pmxcfs not mounted" pvesan/vm-201-disk-0 /etc/keel-window.cue "$s1" pve.storage_cfg_unreadable "systemctl status pve-cluster"
rm -rf /etc/pve /var/lib/dpkg/info/pve-manager.list
must vgchange -q -an pvesan

# --- 2. a SAN seen by several libvirt hosts, declared shared ---------------
must pvcreate -q "$(disk sh2)"
must vgcreate -q sansh "$(disk sh2)"
vmdisk sansh vm-202-disk-0
s2=$SUM
"$KEEL" snapshot -o "$O/sharedcfg-declared.txtar" || echo "note: keel snapshot (plain) failed"
held "declared shared" sansh/vm-202-disk-0 /etc/keel-declared.cue "$s2" "the desired state declares it shared (shared: true)"
must vgchange -q -an sansh

# --- 3. storage.cfg where proxmox.storageConfig says ------------------------
must pvcreate -q "$(disk sh3)"
must vgcreate -q pvecustom "$(disk sh3)"
vmdisk pvecustom vm-203-disk-0
s3=$SUM
mkdir -p /etc/keel-pve
printf 'dir: local\n\tpath /var/lib/vz\n\tcontent iso\n\nlvm: san3\n\tvgname pvecustom\n\tcontent images\n\tshared 1\n' >/etc/keel-pve/storage.cfg
"$KEEL" snapshot -c /etc/keel-custom.cue -o "$O/sharedcfg-custom.txtar" || echo "note: keel snapshot -c (custom) failed"
held "storageConfig honoured" pvecustom/vm-203-disk-0 /etc/keel-custom.cue "$s3" "Proxmox storage san3" "pvesm free san3:vm-203-disk-0"

lvs -a -o vg_name,lv_name,lv_attr >"$O/lvs-final.txt" 2>&1
echo "FAILS=$FAILS"
exit "$FAILS"
