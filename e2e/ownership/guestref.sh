#!/usr/bin/env bash
# An LV that a guest's configuration names is never removed, in one boot of
# the test guest. The guest has no pmxcfs: /etc/pve is written as plain files,
# laid out as pmxcfs shows a cluster (a VM of another node under
# /etc/pve/nodes/othernode/qemu-server).
#
#  - guest-vg/vm-105-disk-0 is unused0 of VM 105 (an "unused" disk still
#    belongs to the VM: Proxmox VE keeps it until someone removes it);
#  - guest-vg/vm-105-disk-1 is named only by the snapshot section
#    [before-upgrade] of the same config;
#  - guest-vg/kvm-web-disk is the disk of a libvirt domain, by its
#    /dev/mapper path (dashes doubled);
#  - guest-vg/vm-107-disk-0 is named by nothing.
# keel check names each reference by file and line (lv.absent_referenced),
# keel wipe by name refuses, keel apply keeps the three with their data and
# removes vm-107-disk-0.
#
# Run from the repository root with a static keel binary:
#   CGO_ENABLED=0 go build -o /tmp/keel ./cmd/keel
#   e2e/vm-run.sh --keel /tmp/keel --hdd 1G e2e/ownership/guestref.sh e2e/ownership/guestref.cue
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
O=$OUT/guestref
mkdir -p "$O"
versions >"$O/versions.txt" 2>&1
. "$SHARE/wipelib.sh"

hd=$(disk hdd1)
mkdir -p /etc/keel
chmod 755 /etc/keel
install -m 0644 "$SHARE/guestref.cue" /etc/keel/guestref.cue
CFG=/etc/keel/guestref.cue

must pvcreate -q "$hd"
must vgcreate -q guest-vg "$hd"
for lv in vm-105-disk-0 vm-105-disk-1 kvm-web-disk vm-107-disk-0; do
	must lvcreate -q -y -L 16M -n "$lv" guest-vg
	must dd if=/dev/urandom of="/dev/guest-vg/$lv" bs=1M count=16 oflag=direct status=none
done
sync
declare -A sums
for lv in vm-105-disk-0 vm-105-disk-1 kvm-web-disk; do
	sums[$lv]=$(sum "guest-vg/$lv")
done

mkdir -p /etc/pve/nodes/othernode/qemu-server /etc/pve/nodes/thisnode/qemu-server \
	/etc/pve/nodes/thisnode/lxc /etc/libvirt/qemu
# On a node /etc/pve/qemu-server and /etc/pve/lxc are pmxcfs's links to the
# local node's directories.
ln -sfn nodes/thisnode/qemu-server /etc/pve/qemu-server
ln -sfn nodes/thisnode/lxc /etc/pve/lxc
cat >/etc/pve/storage.cfg <<'CFG'
dir: local
	path /var/lib/vz
	content iso,vztmpl,backup

lvm: store
	vgname guest-vg
	content images,rootdir
CFG
cat >/etc/pve/nodes/othernode/qemu-server/105.conf <<'CFG'
boot: order=scsi0
cores: 1
memory: 512
name: vm105
parent: before-upgrade
scsihw: virtio-scsi-pci
unused0: store:vm-105-disk-0

[before-upgrade]
boot: order=scsi0
cores: 1
memory: 512
scsi0: store:vm-105-disk-1,size=16M
snaptime: 1700000000
CFG
cat >/etc/libvirt/qemu/web.xml <<'XML'
<domain type='kvm'>
  <name>web</name>
  <memory unit='KiB'>524288</memory>
  <devices>
    <disk type='block' device='disk'>
      <driver name='qemu' type='raw' cache='none' io='native'/>
      <source dev='/dev/mapper/guest--vg-kvm--web--disk'/>
      <target dev='vda' bus='virtio'/>
    </disk>
  </devices>
</domain>
XML
lvs -o vg_name,lv_name,lv_attr,lv_size guest-vg | sed 's/^/    /'
"$KEEL" snapshot -o "$O/node-guestref.txtar" || fail "keel snapshot (setup)"

# --- keel check names every reference by file and line ------------------------
"$KEEL" check -c "$CFG" >"$O/check.txt" 2>&1
sed 's/^/    /' "$O/check.txt"
for want in "guest-vg/vm-105-disk-0:/etc/pve/nodes/othernode/qemu-server/105.conf:7" \
	"guest-vg/vm-105-disk-1:/etc/pve/nodes/othernode/qemu-server/105.conf:13" \
	"guest-vg/kvm-web-disk:/etc/libvirt/qemu/web.xml:7"; do
	obj=${want%%:*} where=${want#*:}
	# The text report: "ERROR    lv.absent_referenced  VG/LV", then the
	# message, expected, observed and remedy lines.
	if grep -A4 "lv.absent_referenced  $obj\$" "$O/check.txt" | grep -q -- "$where"; then
		ok "keel check: lv.absent_referenced $obj names $where"
	else
		fail "keel check lacks lv.absent_referenced $obj naming $where"
	fi
done

# --- keel wipe by name refuses ----------------------------------------------------
before=$(lvlist)
rc=0
out=$("$KEEL" wipe -c "$CFG" guest-vg/vm-105-disk-0 2>&1) || rc=$?
echo "$out" | sed 's/^/    /'
echo "    keel wipe rc $rc"
if [ "$rc" -eq 1 ] && [ "$before" = "$(lvlist)" ] && grep -q "105.conf:7" <<<"$out"; then
	ok "keel wipe guest-vg/vm-105-disk-0 refused naming 105.conf:7, nothing changed"
else
	fail "keel wipe guest-vg/vm-105-disk-0: rc $rc, want 1 naming 105.conf:7 with nothing changed"
fi

# --- keel apply keeps what a guest names -----------------------------------------
rc=0
out=$("$KEEL" apply -c "$CFG" 2>&1) || rc=$?
echo "$out" | sed 's/^/    /'
echo "    keel apply rc $rc"
for lv in vm-105-disk-0 vm-105-disk-1 kvm-web-disk; do
	if ! exists "guest-vg/$lv"; then
		fail "keel apply removed guest-vg/$lv, which a guest's configuration names"
	elif [ "$(sum "guest-vg/$lv")" != "${sums[$lv]}" ]; then
		fail "keel apply changed the data of guest-vg/$lv"
	else
		ok "keel apply kept guest-vg/$lv, checksum intact"
	fi
done
if exists guest-vg/vm-107-disk-0 || exists guest-vg/del-vm-107-disk-0; then
	fail "keel apply left guest-vg/vm-107-disk-0, which nothing names"
else
	ok "keel apply removed guest-vg/vm-107-disk-0, which nothing names"
fi

lvlist >"$O/lvs-final.txt"
echo "FAILS=$FAILS"
exit "$FAILS"
