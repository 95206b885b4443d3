#!/usr/bin/env bash
# Boot 2 (a cold reboot over the same disks): the stacked VG must have been
# active before the pve-guests stand-in ran, the bcache tunables back, lvm.conf
# intact, keel.service READY, keel's entries in the journal, the data intact.
set -uo pipefail
fail=0
pass() { echo "PASS: $*"; }
flunk() { echo "FAIL: $*"; fail=1; }

systemctl status --no-pager keel-activate.service pve-guests.service keel.service >"$OUT/status.txt" 2>&1
systemctl is-active -q keel-activate.service && pass "keel-activate active" || flunk "keel-activate: $(systemctl is-active keel-activate.service)"
if [ -s /var/lib/standin/ran ] && [ "$(sed -n 2p /var/lib/standin/ran | tr -d ' ')" = active ]; then
	pass "vdovg/data was active when the pve-guests stand-in ran"
else
	flunk "stand-in saw: $(cat /var/lib/standin/ran 2>&1)"
fi
# The ordering, from systemd's own timestamps.
a=$(systemctl show -P ActiveEnterTimestampMonotonic keel-activate.service)
g=$(systemctl show -P ExecMainStartTimestampMonotonic pve-guests.service)
[ "$a" -gt 0 ] && [ "$g" -ge "$a" ] && pass "pve-guests started ${g}us >= keel-activate ready ${a}us" || flunk "order: activate $a, guests $g"
s=$(systemctl show -P ExecMainStartTimestampMonotonic keel-activate.service)
echo "activate_start_to_ready_ms=$(((a - s) / 1000))" | tee "$OUT/activate-ready.txt"

[ "$(cat /sys/block/bcache0/bcache/sequential_cutoff)" = 0.0k ] && [ "$(cat /sys/block/bcache0/bcache/writeback_percent)" = 40 ] &&
	pass "bcache tunables back (sequential_cutoff 0.0k, writeback_percent 40)" || flunk "bcache: $(cat /sys/block/bcache0/bcache/sequential_cutoff) $(cat /sys/block/bcache0/bcache/writeback_percent)"
cset=$(basename "$(readlink -f /sys/block/bcache0/bcache/cache)")
cat "/sys/fs/bcache/$cset/congested_read_threshold_us" "/sys/fs/bcache/$cset/congested_write_threshold_us" >"$OUT/congested.txt" 2>&1
[ "$(tr '\n' ' ' <"$OUT/congested.txt")" = "0 0 " ] && pass "cache-set congested thresholds 0 0" || flunk "congested: $(cat "$OUT/congested.txt")"
[ "$(lvmconfig --typeconfig full devices/scan_lvs)" = scan_lvs=1 ] && pass "lvm.conf intact (scan_lvs=1)" || flunk "lvm.conf: $(lvmconfig --typeconfig full devices/scan_lvs)"

systemctl is-active -q keel.service && pass "keel.service active (Type=notify: READY received)" || flunk "keel.service: $(systemctl is-active keel.service); $(journalctl -b -u keel.service -o cat | tail -5)"
# The shipped unit's sandbox (ProtectSystem=strict) lets keel run write what it
# writes: the textfile at the configured path, and its own udev rule after a
# hand edit (docs/packaging.md).
tf=/var/lib/node_exporter/textfile_collector/keel.prom
for _ in $(seq 1 60); do [ -s "$tf" ] && break; sleep 1; done
grep -q '^keel_vdo_used_ratio{' "$tf" 2>/dev/null && grep -q '^keel_audit_mode 0$' "$tf" &&
	pass "keel.service wrote the textfile at the configured path $tf ($(grep -c '^keel_' "$tf") series)" ||
	flunk "no textfile at $tf: $(journalctl -b -u keel.service -o cat | grep -m2 'metrics textfile')"
rule=/etc/udev/rules.d/70-keel-bcache.rules
sed -i 's/writeback_percent}="40"/writeback_percent}="10"/' "$rule"
if keel udev-rules --check >/dev/null 2>&1; then
	flunk "keel udev-rules --check does not see the hand edit of $rule"
else
	systemctl reload keel.service
	for _ in $(seq 1 90); do keel udev-rules --check >/dev/null 2>&1 && break; sleep 1; done
	keel udev-rules --check >"$OUT/udev-check2.txt" 2>&1 && grep -q 'writeback_percent}="40"' "$rule" &&
		pass "keel.service rewrote the hand-edited $rule" ||
		flunk "keel.service did not rewrite $rule: $(journalctl -b -u keel.service -o cat | grep -m3 -i 'udev\|read-only')"
fi

rc=0
journalctl -b -o json SYSLOG_IDENTIFIER=keel-activate >"$OUT/activate.json" 2>"$OUT/activate.json.err" || rc=$?
[ $rc = 0 ] || flunk "journalctl SYSLOG_IDENTIFIER=keel-activate: exit $rc, $(cat "$OUT/activate.json.err")"
rc=0
journalctl -b -o json SYSLOG_IDENTIFIER=keel >"$OUT/keel.json" 2>"$OUT/keel.json.err" || rc=$?
[ $rc = 0 ] || flunk "journalctl SYSLOG_IDENTIFIER=keel: exit $rc, $(cat "$OUT/keel.json.err")"
grep -q '"MESSAGE":"stack active"' "$OUT/activate.json" && grep -q '"TOOK":' "$OUT/activate.json" &&
	pass "journal: keel-activate's structured 'stack active' entry" || flunk "no structured keel-activate entry"
# Who set the bcache tunables: keel-activate logs a structured "boot action"
# entry (field ID, the action) for each value it had to write, keel.service
# an "action converged" entry (field ACTION). Once keel-activate is known to
# have run ("stack active", the presence check) and keel.service to have
# made its first pass (checked above), no bcache action from either means
# keel's udev rule had set them at registration.
if ! grep -q '"MESSAGE":"stack active"' "$OUT/activate.json"; then
	flunk "keel-activate logged no 'stack active': cannot tell who set the bcache tunables"
elif grep '"MESSAGE":"boot action"' "$OUT/activate.json" | grep -q '"ID":"bcache'; then
	flunk "keel-activate had to re-apply bcache tunables, keel's udev rule did not set them: $(grep '"MESSAGE":"boot action"' "$OUT/activate.json" | grep -o '"ID":"bcache[^"]*"' | tr '\n' ' ')"
elif grep -o '"ACTION":"bcache[^"]*"' "$OUT/keel.json" | grep -qv '"ACTION":"bcache.udev_rule:'; then
	# bcache.udev_rule is the rule file this script edited above, not a tunable.
	flunk "keel.service had to re-apply bcache tunables, keel's udev rule did not set them: $(grep -o '"ACTION":"bcache[^"]*"' "$OUT/keel.json" | grep -v '"ACTION":"bcache.udev_rule:' | sort -u | tr '\n' ' ')"
else
	pass "keel-activate and keel.service wrote no bcache tunable: the udev rule set them at registration"
fi
# keel.service's own structured entries (journal fields, not stderr text):
# the daemon logs "keel running" with its status once its first pass is done.
grep -q '"MESSAGE":"keel running"' "$OUT/keel.json" && grep -q '"STATUS":' "$OUT/keel.json" &&
	pass "journal: keel.service's structured 'keel running' entry ($(wc -l <"$OUT/keel.json") entries)" ||
	flunk "no structured keel.service 'keel running' entry in $(wc -l <"$OUT/keel.json") entries"
# lvm2 activated both VGs itself (keel's udev rule lets it scan the PV on
# the VDO LV): keel-activate tells READY on the metadata it read during that
# activation and device-mapper's devices after it, and, as the shipped unit
# asks (--leave-pass-to-daemon), leaves its probe pass to keel.service.
if grep -q '"MESSAGE":"stack active; READY before the probe pass"' "$OUT/activate.json" &&
	grep -q '"MESSAGE":"probe pass, live settings and udev rules left to keel.service"' "$OUT/activate.json" &&
	! grep -q '"MESSAGE":"host probed"' "$OUT/activate.json"; then
	pass "keel-activate told READY after lvm2's activation and left its probe pass to keel.service"
else
	flunk "keel-activate did not tell READY before its probe pass: $(grep -o '"MESSAGE":"[^"]*\(lvm2\|READY\|probing\)[^"]*"' "$OUT/activate.json" | tr '\n' ' ')"
fi
# keel-boot (the unit's ExecStart) took the desired state from keel's cache,
# which keel.service filled at boot 1, and did not hand over to keel.
if grep -q '"MESSAGE":"desired state loaded".*"FROM":"keel'"'"'s desired-state cache"\|"FROM":"keel'"'"'s desired-state cache".*"MESSAGE":"desired state loaded"' "$OUT/activate.json" &&
	! grep -q '"MESSAGE":"handing over to keel activate"' "$OUT/activate.json"; then
	pass "keel-boot told READY itself, on keel's cached desired state"
else
	flunk "keel-boot did not take the fast path: $(grep -o '"MESSAGE":"handing over[^}]*' "$OUT/activate.json" | head -1)"
fi
# While lvm2 activated, keel-boot slept on inotify (lvm2's units' cgroup.events,
# the slice's directory, udev's run directory), not on a 25 ms timer: the
# kernel's cgroupfs reports those changes. It waits only if lvm2 was still
# activating a declared VG when it started.
waited=$(grep '"MESSAGE":"waiting for lvm2'"'"'s autoactivation"' "$OUT/activate.json" | head -1)
ended=$(grep '"MESSAGE":"lvm2'"'"'s autoactivation ended"' "$OUT/activate.json" | grep -o '"\(LOOKS\|WAITED\)":"[^"]*"' | tr '\n' ' ')
case "$waited" in
"") pass "keel-boot started after lvm2's activation: nothing to wait on" ;;
*'"WOKEN_BY":"inotify"'*) pass "keel-boot waited for lvm2's activation on inotify (${ended% })" ;;
*) flunk "keel-boot waited for lvm2's activation on $(echo "$waited" | grep -o '"WOKEN_BY":"[^"]*"'), not inotify" ;;
esac
grep -o '"MESSAGE":"activating[^"]*"\|"COMMAND":"[^"]*"' "$OUT/activate.json" >"$OUT/activate-commands.txt" || true
echo "keel-activate ran: $(tr '\n' ' ' <"$OUT/activate-commands.txt")"

# keel activate, which keel-boot hands over to, sleeps on inotify too while
# lvm2 activates: lvm2's unit for vdovg (the name 69-dm-lvm.rules gives it)
# stood in for by one that sleeps 3 s before the same vgchange, and keel
# activate started beside it. On a 25 ms timer the wait would look ~120 times.
systemctl reset-failed lvm-activate-vdovg.service 2>/dev/null
systemd-run -q --unit lvm-activate-vdovg --property DefaultDependencies=no \
	sh -c 'sleep 3; exec /usr/sbin/lvm vgchange -aay --autoactivation event vdovg'
rc=0
keel activate -c /etc/keel --timeout 1m >"$OUT/activate-byhand.txt" 2>&1 || rc=$?
looks=$(grep -o "autoactivation ended.*looks=[0-9]*" "$OUT/activate-byhand.txt" | grep -o 'looks=[0-9]*' | cut -d= -f2)
if [ $rc = 0 ] && grep -q "waiting for lvm2's autoactivation.*vgs=vdovg.*woken_by=inotify" "$OUT/activate-byhand.txt" &&
	[ -n "$looks" ] && [ "$looks" -lt 40 ]; then
	pass "keel activate waited for lvm2's unit on inotify ($looks looks)"
else
	flunk "keel activate beside lvm2's unit: exit $rc, looks ${looks:-none}: $(grep -m3 "autoactivation\|error" "$OUT/activate-byhand.txt")"
fi

sum=$(head -c 64M /dev/vdovg/data | sha256sum | cut -d' ' -f1)
[ "$sum" = "$(cat /var/lib/keel-e2e/data.sha256)" ] && pass "data checksum matches" || flunk "checksum $sum != $(cat /var/lib/keel-e2e/data.sha256)"
rm -f /var/lib/standin/ran
journalctl -b -u keel-activate.service -o cat >"$OUT/activate.journal" 2>&1
journalctl -b -o short-monotonic -u keel-activate.service -u pve-guests.service -u keel.service >"$OUT/units.journal" 2>&1
sync
exit $fail
