#!/usr/bin/env bash
# A VG shared through lvmlockd, in one boot of the test guest with two small
# disks (serials snap1, lock1):
#
# 1. A Proxmox VE thin snapshot (snap_vm-100-disk-0_snap1, active) holding
# the guest's PV is seen by LVM through the VM-disk reject of keel's
# examples; keel check --audit names it, and the reject that also matches
# snap_ hides it from LVM.
#
# 2. lvm.conf gets use_lvmlockd = 1 and lvmlocal.conf a host_id; sanlock (no
# watchdog) and lvmlockd start, and vgcreate --shared makes lockvg, whose
# lockspace vgcreate starts (lvmlockd(8)). keel status shows its lock type
# and the lockspace started. A Proxmox VE disk vm-100-disk-0 made with
# autoactivation on (lvcreate's default) is reported
# (lv.shared_autoactivation, Proxmox VE bug 4997) and its printed remedy,
# typed as printed, clears it. After vgchange --lockstop keel check reports
# vg.lockstart_missing, whose remedy starts the lockspace again; once
# lvmlockd has quit, it reports vg.lvmlockd_missing.
#
# Run from the repository root with a static keel binary:
#   CGO_ENABLED=0 go build -o /tmp/keel ./cmd/keel
#   KEEL_E2E_BIN=/tmp/keel go test -tags e2e -run TestLockd ./e2e/health/
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
O=$OUT/lockd
mkdir -p "$O"
. "$SHARE/wipelib.sh"
export LVM_SUPPRESS_FD_WARNINGS=1

d=$(disk lock1) || exit 100
mkdir -p /etc/keel
chmod 755 /etc/keel
install -m 0644 "$SHARE/lockd.cue" /etc/keel/lockd.cue
CFG=/etc/keel/lockd.cue

# --- 1. a Proxmox VE thin snapshot under the VM-disk reject ----------------
# pve-storage's LvmThinPlugin.pm snapshots a disk as
# "lvcreate -n snap_<volname>_<snap> -pr -s VG/<volname>" and activates it
# with "lvchange -ay -K" (activate_volume); the guest's own PV, inside the
# disk, is then on the snapshot too. With scan_lvs on, the VM-disk reject
# keel's examples declared does not match its device-mapper name
# (pvethin-snap_vm--100--disk--0_snap1): LVM sees the guest's PV.
OLDREJ='/dev/mapper/.*-(vm|base)--[0-9]+--disk--[0-9]+'
NEWREJ='/dev/mapper/.*-(snap_)?(vm|base)--[0-9]+--disk--[0-9]+'
t=$(disk snap1) || exit 100
cp /etc/lvm/lvmlocal.conf "$O/lvmlocal.conf.orig"
must vgcreate -q pvethin "$t"
must lvcreate -q -y -L 64M -T pvethin/data
must lvcreate -q -y -V 32M -T pvethin/data -n vm-100-disk-0
must pvcreate -q -y --config 'devices { scan_lvs = 1 }' /dev/pvethin/vm-100-disk-0
must lvcreate -q -n snap_vm-100-disk-0_snap1 -pr -s pvethin/vm-100-disk-0
must lvchange -q -ay -K pvethin/snap_vm-100-disk-0_snap1
snapdev=/dev/mapper/pvethin-snap_vm--100--disk--0_snap1
printf 'devices {\n\tscan_lvs = 1\n\tglobal_filter = [ "r|%s|" ]\n}\n' "$OLDREJ" >>/etc/lvm/lvmlocal.conf
if pvs --noheadings -o pv_name 2>/dev/null | grep -q "snap_vm-100-disk-0_snap1"; then
	ok "LVM sees the guest's PV on the active thin snapshot $snapdev through the VM-disk reject"
else
	fail "LVM does not list the PV on $snapdev: $(pvs --noheadings -o pv_name 2>&1 | tr -s ' \n' ' ')"
fi
"$KEEL" snapshot -o "$O/filter-thinsnap.txtar" || fail "keel snapshot (thin snapshot)"
audit=$("$KEEL" check --audit 2>&1)
echo "$audit" | sed 's/^/    /'
if awk '/^[A-Z]+ +lvm\.global_filter /{on=1; next} /^[A-Z]+ /{on=0} on' <<<"$audit" | grep -q "pvethin/snap_vm-100-disk-0_snap1"; then
	ok "keel check --audit reports lvm.global_filter naming pvethin/snap_vm-100-disk-0_snap1"
else
	fail "keel check --audit does not name pvethin/snap_vm-100-disk-0_snap1 under lvm.global_filter"
fi
if pvs --noheadings -o pv_name --config "devices { scan_lvs = 1 global_filter = [ \"r|$NEWREJ|\" ] }" 2>&1 | grep -q "snap_vm"; then
	fail "the reject $NEWREJ leaves $snapdev to LVM"
else
	ok "the reject $NEWREJ hides the snapshot from LVM (pvs lists no PV on it)"
fi
cp "$O/lvmlocal.conf.orig" /etc/lvm/lvmlocal.conf
must vgremove -q -y pvethin

# --- 2. a VG shared through lvmlockd -----------------------------------------
# use_lvmlockd in lvm.conf's global section, host_id in lvmlocal.conf's
# local section (lvmlockd(8), "Setup"): the commented defaults Debian ships
# are replaced, and lvmconfig must read them back.
sed -i 's/^\([[:space:]]*\)#[[:space:]]*use_lvmlockd = 0/\1use_lvmlockd = 1/' /etc/lvm/lvm.conf
sed -i 's/^\([[:space:]]*\)#[[:space:]]*host_id = 0/\1host_id = 1/' /etc/lvm/lvmlocal.conf
if [ "$(lvmconfig --valuesonly global/use_lvmlockd 2>&1)" != 1 ] || [ "$(lvmconfig --valuesonly local/host_id 2>&1)" != 1 ]; then
	fail "setup: use_lvmlockd/host_id not set: $(lvmconfig global/use_lvmlockd local/host_id 2>&1 | tr '\n' ' ')"
	exit 100
fi
# sanlock without a watchdog (-w 0: the guest has no wdmd running), as
# root: by default it drops to the user sanlock (sanlock src/main.c), whose
# groups here cannot open the lvmlock LV (root:disk 0660), and lvmlockd's
# vgcreate then fails with "VG lockvg init failed: -19" (sanlock's
# cmd_write_lockspace answers any open error with -ENODEV). A short
# sanlock I/O timeout (lvmlockd -o) keeps the lockspace start short.
must sanlock daemon -w 0 -U root -G root
must lvmlockd -o 5
# The first sanlock VG is made on a device pvcreate has not touched: no
# global lock exists before it, and vgcreate initialises the PV itself
# (lvmlockd(8), "Creating the first sanlock VG").
must vgcreate -q --shared lockvg "$d"
# vgcreate has started the lockspace; this waits until the start is done
# (lvmlockd(8): "until the start completes the VG may not be modified").
step vgchange --lockstart lockvg
lt=$(vgs --noheadings -o vg_lock_type lockvg | tr -d ' ')
echo "    lock type $lt; lvmlockctl -i:"
lvmlockctl -i 2>&1 | sed 's/^/    /'

st=$("$KEEL" status 2>&1)
echo "$st" | sed 's/^/    /'
if grep -qE "^vg lockvg: .*" <<<"$st" && grep -qE "^  lock sanlock .*lockspace started" <<<"$st"; then
	ok "keel status shows lockvg's lock type sanlock and its lockspace started"
else
	fail "keel status shows no lock type and lockspace state for lockvg"
fi

# check: keel check's output, its exit status in rc.
check() {
	rc=0
	checked=$("$KEEL" check -c "$CFG" 2>&1) || rc=$?
	echo "$checked" | sed 's/^/    /'
}
# remedy ID OBJ: the remedy keel check printed for finding ID on OBJ.
remedy() {
	awk -v id="$1" -v obj="$2" '$2 == id && $3 == obj { on = 1; next }
		on && $1 == "remedy:" { sub(/^ *remedy: */, ""); print; exit }' <<<"$checked"
}
# fixed ID OBJ WHAT: keel check reported ID on OBJ; its remedy, typed as
# printed, runs, and the next keel check no longer reports it.
fixed() {
	local id=$1 obj=$2 r rc2=0
	check
	if ! grep -qE "^[A-Z]+ +${id//./\\.} +$obj\$" <<<"$checked"; then
		fail "keel check (rc $rc) does not report $id $obj after $3"
		return
	fi
	ok "keel check reports $id $obj after $3"
	r=$(remedy "$id" "$obj")
	[ -n "$r" ] && { eval "$r" >"$O/remedy.out" 2>&1 || rc2=$?; }
	check
	if [ -n "$r" ] && [ $rc2 = 0 ] && ! grep -qE " ${id//./\\.} +$obj\$" <<<"$checked"; then
		ok "remedy '$r' runs as printed and $id $obj is gone"
	else
		fail "remedy '$r': exit $rc2: $(cat "$O/remedy.out" 2>/dev/null); $id still reported: $(grep -c " $id " <<<"$checked")"
	fi
}

# Proxmox VE bug 4997: a guest disk on a shared VG that every node
# autoactivates at boot. lvcreate activates it here (exclusively).
must lvcreate -q -y -L 8M -n vm-100-disk-0 lockvg
"$KEEL" snapshot -o "$O/lockd-started.txtar" || fail "keel snapshot (started)"
fixed lv.shared_autoactivation lockvg/vm-100-disk-0 "lvcreate with autoactivation on"

# A stopped lockspace: LVM reads lockvg without locks and changes nothing
# in it (lvmlockd(8), "Starting and stopping VGs").
must lvchange -q -an lockvg/vm-100-disk-0
must vgchange -q --lockstop lockvg
"$KEEL" snapshot -o "$O/lockd-stopped.txtar" || fail "keel snapshot (stopped)"
fixed vg.lockstart_missing lockvg "vgchange --lockstop"

# lvmlockd gone: no lockspace can start, no shared VG be changed.
must vgchange -q --lockstop lockvg
must lvmlockctl -q
for i in $(seq 50); do pgrep -x lvmlockd >/dev/null || break; sleep 0.1; done
"$KEEL" snapshot -o "$O/lockd-nodaemon.txtar" || fail "keel snapshot (no lvmlockd)"
check
if grep -qE "^[A-Z]+ +vg\.lvmlockd_missing +lockvg\$" <<<"$checked"; then
	ok "keel check reports vg.lvmlockd_missing lockvg after lvmlockd quit"
else
	fail "keel check (rc $rc) does not report vg.lvmlockd_missing lockvg after lvmlockd quit"
fi
exit $FAILS
