#!/usr/bin/env bash
# Audit mode changes nothing, at any of keel's entry points as shipped
# (e2e/audit), in one boot of the systemd guest:
#
# keel's .deb is installed; the host drifts from a desired state that says
# agent.mode "audit" (audit.cue): lvm.conf lacks scan_lvs = 1, the thin pool
# zeroes, two bcache tunables are the kernel's defaults, keel's bcache udev
# rule is stale, auditvg/data is declared absent and auditvg/vm-101-disk-0 is
# inactive. Then each entry point runs in turn: keel-activate.service,
# keel.service, keel-check.timer and the keel-check.service it starts, keel
# apply, keel activate, keel udev-rules --write, keel wipe NAME and keel wipe
# --absent. After each, lvm.conf and the udev rules (sha256), the bcache
# tunables (sysfs), every VG's metadata seqno and the LV list must be what
# they were. A change is a FAIL naming what changed; the host is then drifted
# again, so every entry point is judged on a drifted host.
#
# Disks: hdd1 (auditvg), ssd2 (bcache cache), hdd3 (bcache backing).
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
. "$SHARE/stacks.sh"
. "$SHARE/wipelib.sh"
O=$OUT/audit
mkdir -p "$O"
hd=$(disk hdd1) || exit 100
ssd=$(disk ssd2) || exit 100
bk=$(disk hdd3) || exit 100
BC=/sys/block/bcache0/bcache
export LVM_SUPPRESS_FD_WARNINGS=1

must dpkg -i "$SHARE/keel.deb"
lvm_conf_save
must stack_bcache "$ssd" "$bk"
must pvcreate -q "$hd"
must vgcreate -q auditvg "$hd"
must lvcreate -q -y -L 64M -Zy -T auditvg/tpool
must lvcreate -q -y -V 32M -T auditvg/tpool -n vm-101-disk-0
must lvcreate -q -y -L 16M -n data auditvg
uuid=$(cat $BC/backing_dev_uuid)
sed "s|BACKING_UUID|$uuid|" "$SHARE/audit.cue" >/etc/keel/keel.cue
chmod 644 /etc/keel/keel.cue
mkdir -p /var/lib/prometheus/node-exporter

# drift puts the host back where the desired state says it should not be.
drift() {
	cp /etc/lvm/lvm.conf.stock /etc/lvm/lvm.conf
	echo 10 >$BC/writeback_percent
	# The kernel's default; this kernel takes a plain number here.
	echo 4194304 >$BC/sequential_cutoff
	printf '# stale: not what keel generates\n' >/etc/udev/rules.d/70-keel-bcache.rules
	# lv_attr's eighth character is z while the pool zeroes new chunks.
	lvs --noheadings -o lv_attr auditvg/tpool | grep -q '^ *.......z' || lvchange -q -Zy auditvg/tpool >/dev/null
	exists auditvg/data || lvcreate -q -y -L 16M -n data auditvg >/dev/null
	lvchange -q -an auditvg/vm-101-disk-0
}
# snap: what audit mode must leave alone. The LVs are listed without
# lv_attr: activation, which audit mode does as lvm2 would, changes it; a
# change of an LV's settings bumps its VG's seqno.
snap() {
	sha256sum /etc/lvm/lvm.conf /etc/udev/rules.d/*
	for a in writeback_percent sequential_cutoff cache_mode; do echo "$a $(cat $BC/$a)"; done
	vgs --noheadings -o vg_name,seqno | sort
	lvs -a --noheadings -o vg_name,lv_name,lv_uuid | sort || echo "lvs failed ($RANDOM $RANDOM)"
}
# judge WHAT: "ok: WHAT changed nothing", or a FAIL naming the changes,
# then the host is drifted again for the next entry point.
judge() {
	local after
	echo "time: $1 done at ${SECONDS}s"
	after=$(snap)
	if [ "$after" = "$base" ]; then
		ok "$1 changed nothing (lvm.conf, udev rules, bcache sysfs, VG seqnos, LVs)"
	else
		fail "$1 changed: $(diff <(echo "$base") <(echo "$after") | grep '^[<>]' | tr -s ' \n' ' ')"
		drift
	fi
	base=$(snap)
}

drift
base=$(snap)
echo "$base" >"$O/before.txt"
echo "time: drifted host ready at ${SECONDS}s"

rc=0
timeout 180 systemctl start keel-activate.service || rc=$?
journalctl -q -o cat -u keel-activate.service >"$O/activate-unit.txt"
[ $rc = 0 ] || fail "systemctl start keel-activate.service: exit $rc: $(tail -3 "$O/activate-unit.txt" | tr '\n' ' ')"
lvs --noheadings -o lv_attr auditvg/vm-101-disk-0 | grep -q '^ *....a' &&
	ok "keel-activate.service activated auditvg/vm-101-disk-0, as lvm2's autoactivation would" ||
	fail "keel-activate.service left auditvg/vm-101-disk-0 inactive"
judge keel-activate.service
lvchange -q -an auditvg/vm-101-disk-0
base=$(snap)

rc=0
timeout 120 systemctl start keel.service || rc=$?
# A bound, not a timing claim: the first pass under TCG takes seconds.
for i in $(seq 180); do
	case $(systemctl show -P StatusText keel.service) in "audit mode"*) break ;; esac
	sleep 1
done
st=$(systemctl show -P StatusText keel.service)
systemctl stop keel.service
journalctl -q -o cat -u keel.service >"$O/keel-unit.txt"
case $st in
"audit mode"*) ok "keel.service ran a pass in audit mode" ;;
*) fail "keel.service (exit $rc): no audit pass, STATUS=$st" ;;
esac
judge keel.service

rc=0
systemctl start keel-check.timer && timeout 300 systemctl start keel-check.service || rc=$?
[ -s /var/lib/prometheus/node-exporter/keel.prom ] || fail "keel-check.service (exit $rc) wrote no textfile"
systemctl stop keel-check.timer
judge "keel-check.timer and keel-check.service"

# entry NAME WANT_RC CMD...: run a command line, keep its output, check its
# exit status, then judge.
entry() {
	local name=$1 want=$2 rc=0
	shift 2
	"$@" >"$O/$name.out" 2>"$O/$name.err" || rc=$?
	if [ $rc = "$want" ]; then
		ok "$* in audit mode: exit $rc: $(grep -h -m1 -e 'agent.mode is' -e 'audit mode' "$O/$name.err" "$O/$name.out" | head -1)"
	else
		fail "$* in audit mode: exit $rc, want $want: $(tail -2 "$O/$name.err" | tr '\n' ' ')"
	fi
	judge "$*"
}
entry apply 1 keel apply
entry activate 0 keel activate --timeout 30s
entry udev 0 keel udev-rules --write
entry wipe 1 keel wipe auditvg/data
entry wipe-absent 1 keel wipe --absent
echo "$base" >"$O/after.txt"
exit $FAILS
