#!/usr/bin/env bash
# The safe removal under systemd as shipped, with a short watchdog: keel.service
# (the .deb's unit) with WatchdogSec=20s removes an LV whose wipe takes over
# twice that interval, because every write to its PV is delayed (dm-delay, as lvm2's
# own tests slow a PV down). The wipe starts in a pass after READY, when the
# watchdog is armed. Then a second wipe is killed with SIGKILL midway and
# systemd's restart resumes it from keel's last checkpoint, not byte 0.
# Disk: hdd1 4G.
set -uo pipefail
. "$SHARE/stacks.sh"
fail=0
pass() { echo "PASS: $*"; }
flunk() { echo "FAIL: $*"; fail=1; }
hd=$(disk hdd1)

dpkg -i "$SHARE/keel.deb" >"$OUT/dpkg.txt" 2>&1 || { flunk "dpkg -i keel.deb"; cat "$OUT/dpkg.txt"; exit 1; }
modprobe dm-delay || { flunk "modprobe dm-delay"; exit 1; }
# Reads at once, each write 150 ms late.
sz=$(blockdev --getsz "$hd")
dmsetup create slow --table "0 $sz delay $hd 0 0 $hd 0 150" || { flunk "dmsetup create slow"; exit 1; }
# LVM must see the PV only through the delay device, not also on the disk
# under it (a duplicate PV): accept that one device, reject every other name.
cat >>/etc/lvm/lvmlocal.conf <<'LVM'
devices {
	global_filter = [ "a|^/dev/mapper/slow$|", "r|.*|" ]
}
LVM
pvcreate -q -y /dev/mapper/slow && vgcreate -q vms /dev/mapper/slow || { flunk "vms on the slow PV"; exit 1; }
# big: 320 steps of 1 MiB, each write 150 ms late, so at least 48 s, over
# twice WatchdogSec (checked below); big2 only has to outlast the kill.
lvcreate -q -y -L 320M -n big vms && lvcreate -q -y -L 192M -n big2 vms || { flunk "lvcreate"; exit 1; }
dd if=/dev/urandom of=/dev/vms/big bs=1M count=16 oflag=direct status=none || flunk "write data"
pvs --noheadings -o pv_name | grep -q /dev/mapper/slow && ! pvs 2>&1 | grep -qi duplicate &&
	pass "vms sits on /dev/mapper/slow only" || flunk "pvs: $(pvs 2>&1 | tr '\n' ' ')"

desired() { # desired ABSENT...: vms with these LVs absent, zeroout in 1M steps
	local list
	list=$(printf '"%s", ' "$@")
	printf 'volumeGroups: vms: {\n\tpvs: ["/dev/mapper/slow"]\n\tabsent: [%s]\n}\nremoval: {\n\tmode: "zeroout"\n\tstep: "1M"\n}\n' "${list%, }" >/etc/keel/keel.cue
	chmod 644 /etc/keel/keel.cue
}
mkdir -p /etc/keel
printf 'volumeGroups: vms: pvs: ["/dev/mapper/slow"]\n' >/etc/keel/keel.cue
chmod 644 /etc/keel/keel.cue
mkdir -p /etc/systemd/system/keel.service.d
printf '[Service]\nWatchdogSec=20s\n' >/etc/systemd/system/keel.service.d/watchdog.conf
systemctl daemon-reload
t0=$(date +%s)
systemctl start keel.service || flunk "systemctl start keel: $(journalctl -b -u keel -o cat | tail -5)"
[ "$(systemctl show -p WatchdogUSec --value keel.service)" = 20s ] && pass "keel.service runs with WatchdogSec=20s" ||
	flunk "WatchdogUSec $(systemctl show -p WatchdogUSec --value keel.service)"

# --- 1: a wipe far longer than the watchdog interval finishes ---------------
desired big
t1=$(date +%s)
for _ in $(seq 360); do
	lvs vms/big >/dev/null 2>&1 || lvs vms/del-big >/dev/null 2>&1 || break
	sleep 1
done
t2=$(date +%s)
restarts=$(systemctl show -p NRestarts --value keel.service)
if lvs vms/big >/dev/null 2>&1 || lvs vms/del-big >/dev/null 2>&1; then
	flunk "vms/big not removed after $((t2 - t1)) s (restarts: $restarts)"
else
	pass "vms/big removed in $((t2 - t1)) s"
fi
[ "$restarts" = 0 ] && pass "no restart of keel.service during the wipe" || flunk "keel.service restarted $restarts times"
journalctl -b -u keel.service -o cat >"$OUT/journal-1.txt"
if grep -qi "watchdog timeout" "$OUT/journal-1.txt"; then
	flunk "a watchdog timeout: $(grep -i 'watchdog timeout' "$OUT/journal-1.txt" | head -1)"
elif [ "$restarts" = 0 ]; then
	pass "no watchdog timeout"
fi
[ $((t2 - t1)) -ge 40 ] && pass "the wipe took $((t2 - t1)) s, at least twice WatchdogSec" ||
	flunk "the wipe took only $((t2 - t1)) s: too fast to prove anything about the watchdog"

# --- 2: SIGKILL mid-wipe, systemd restarts keel, the wipe resumes ----------
desired big big2
for _ in $(seq 60); do lvs vms/del-big2 >/dev/null 2>&1 && break; sleep 1; done
sleep 12 # at least two checkpoints (every 5 s)
ls -l /var/lib/keel/wipe/ 2>&1 | sed 's/^/    /'
cp=$(cat /var/lib/keel/wipe/*.json 2>/dev/null)
off=$(sed -n 's/.*"offset":\([0-9]*\).*/\1/p' <<<"$cp")
if [ -n "$off" ] && [ "$off" -gt 0 ]; then
	pass "a checkpoint at byte $off of vms/del-big2"
else
	flunk "no checkpoint while vms/del-big2 was wiped: '$cp'"
fi
systemctl kill -s KILL keel.service
for _ in $(seq 480); do
	lvs vms/big2 >/dev/null 2>&1 || lvs vms/del-big2 >/dev/null 2>&1 || break
	sleep 1
done
journalctl -b -u keel.service -o cat >"$OUT/journal-2.txt"
restarts=$(systemctl show -p NRestarts --value keel.service)
if lvs vms/big2 >/dev/null 2>&1 || lvs vms/del-big2 >/dev/null 2>&1; then
	flunk "vms/big2 not removed after the kill: $(lvs --noheadings -o lv_name vms 2>&1 | tr -s ' \n' ' ')(restarts: $restarts)"
else
	pass "vms/big2 removed after the kill (restarts: $restarts)"
fi
# keel logs to the journal with its key/value pairs as fields (OFFSET=).
res=$(journalctl -b -u keel.service MESSAGE="resuming wipe from its checkpoint" -o export 2>/dev/null)
roff=$(sed -n 's/^OFFSET=//p' <<<"$res" | head -1)
if [ -n "$roff" ] && [ -n "$off" ] && [ "$roff" -ge "$off" ]; then
	pass "the restarted keel resumed at byte $roff (last checkpoint seen at $off), not 0"
else
	flunk "no resume from the checkpoint: '$res' (checkpoint $off)"
fi
# An absence that counts only beside the presence seen above.
if [ -z "$off" ]; then
	flunk "no checkpoint was ever seen, so its removal proves nothing"
elif [ -n "$(ls /var/lib/keel/wipe/ 2>/dev/null)" ]; then
	flunk "checkpoints left: $(ls /var/lib/keel/wipe/)"
else
	pass "the checkpoint is gone after lvremove"
fi
echo "wipe_seconds=$((t2 - t1)) total_seconds=$(($(date +%s) - t0))"
exit $fail
