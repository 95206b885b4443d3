#!/usr/bin/env bash
# Boot 3: the slow disk (hdd1, bcache0's backing device) is gone. keel-activate
# must fail naming it, and the pve-guests stand-in must not start.
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
if [ ! -e /var/lib/standin/ran ] && ! systemctl is-active -q pve-guests.service; then
	pass "the pve-guests stand-in did not start ($(systemctl show -P ActiveState pve-guests.service))"
else
	flunk "pve-guests stand-in ran: $(cat /var/lib/standin/ran 2>&1)"
fi
exit $fail
