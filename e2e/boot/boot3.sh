#!/usr/bin/env bash
# Boot 3: the slow disk (hdd1, bcache0's backing device) is gone. keel-activate
# must fail naming it, the pve-guests stand-in must start all the same (after
# keel-activate gave up), and keel check must report the stack critical.
set -uo pipefail
fail=0
pass() { echo "PASS: $*"; }
flunk() { echo "FAIL: $*"; fail=1; }
systemctl status --no-pager keel-activate.service pve-guests.service >"$OUT/status3.txt" 2>&1
journalctl -b -u keel-activate.service -o cat >"$OUT/activate3.journal" 2>&1
cat "$OUT/activate3.journal" | tail -8
systemctl is-failed -q keel-activate.service && pass "keel-activate failed" || flunk "keel-activate: $(systemctl is-active keel-activate.service)"
grep -q 'vdosplit incomplete: PV /dev/bcache0 is missing: bcache device bcache0' "$OUT/activate3.journal" &&
	pass "the message names the missing PV and why" || flunk "message: $(grep -i 'incomplete\|not found' "$OUT/activate3.journal" | head -3)"
grep -q 'vdovg.*PV /dev/vdosplit/vdolv is not active because vdosplit incomplete' "$OUT/activate3.journal" &&
	pass "the stacked VG's message names its lower VG" || flunk "no message for vdovg"
# The guests start anyway, after keel-activate gave up: the VMs on the
# incomplete stack fail on their own, as they would without keel.
a=$(systemctl show -P InactiveEnterTimestampMonotonic keel-activate.service)
g=$(systemctl show -P ExecMainStartTimestampMonotonic pve-guests.service)
if [ -s /var/lib/standin/ran ] && systemctl is-active -q pve-guests.service && [ "$a" -gt 0 ] && [ "$g" -ge "$a" ]; then
	pass "the pve-guests stand-in started after keel-activate failed (${g}us >= ${a}us), vdovg/data $(sed -n 2p /var/lib/standin/ran | tr -d ' ')"
else
	flunk "pve-guests stand-in: $(systemctl show -P ActiveState pve-guests.service), ran: $(cat /var/lib/standin/ran 2>&1), activate failed at ${a}us, guests ${g}us"
fi
[ -s /var/lib/standin/stopped ] && pass "the stand-in's ExecStop ran at the last shutdown" || flunk "the stand-in's ExecStop did not run at the last shutdown"
rc=0
keel check -c /etc/keel >"$OUT/check3.txt" 2>&1 || rc=$?
grep -E '^CRITICAL +vg\.incomplete +vdosplit' "$OUT/check3.txt" &&
	pass "keel check: a critical finding names the incomplete VG (exit $rc)" || flunk "keel check exit $rc: $(head -5 "$OUT/check3.txt")"
exit $fail
