#!/usr/bin/env bash
# The shipped Ansible playbook and role (packaging/integrations/ansible),
# run by Debian's ansible-core with a local connection in the systemd guest,
# as an operator rolls keel out: check mode on a fresh host, a run in audit
# mode, then converge (e2e/audit, TestAnsibleRollout). Three
# ansible-playbook runs in all: each costs a start of Ansible and a Python
# start per module on the host, the bulk of this scenario's time.
#
# The inventory layers the desired state as docs/operations.md does: the
# base (lvm scan_lvs, the global_filter) in group_vars/all, the group's thin-pool setting in
# group_vars/hypervisors, the host's VG in host_vars, its PV from another
# host variable (the layers are templated). The host drifts from it:
# lvm.conf lacks scan_lvs = 1 and the thin pool zeroes.
#
# 1. check mode over two inventory hosts, both this guest: typo-host has a
#    typo in its host layer and fails at keel vet with keel's message naming
#    the field, while the other goes on (one bad host among fifty stops only
#    itself); for it the plan, the lvm.conf diff and the compliance summary
#    are printed; nothing is installed, lvm.conf and the VG are as they were;
# 2. a run: the .deb installed, the layers in /etc/keel, keel.service
#    running in audit mode, the summary printed, the host unchanged;
# 3. a run with keel_mode=converge: keel.service converges the host and
#    keel check passes.
#
# Disk: hdd1 (ansvg). Prints "ok:" / "FAIL:" lines, exits with the failures.
set -u
. "$SHARE/stacks.sh"
. "$SHARE/wipelib.sh"
O=$OUT/ansible
mkdir -p "$O"
hd=$(disk hdd1) || exit 100
export LVM_SUPPRESS_FD_WARNINGS=1 ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0 ANSIBLE_RETRY_FILES_ENABLED=0
# Pipelining hands each module to the host's Python on its stdin instead of
# a file put, chmod-ed and removed with three more commands (Ansible's
# "pipelining" setting; docs/integrations.md recommends it).
export ANSIBLE_PIPELINING=1

lvm_conf_save
must pvcreate -q "$hd"
must vgcreate -q ansvg "$hd"
# keel's chunk size (512K), so that the converged host has no finding.
must lvcreate -q -y -L 64M -Zy --chunksize 512k -T ansvg/tpool
mkdir -p /var/lib/prometheus/node-exporter

A=/root/ansible
mkdir -p $A/group_vars $A/host_vars
cp -r "$SHARE/ansible/." $A/
cat >$A/inventory <<INV
[hypervisors]
$(hostname) ansible_connection=local ansible_python_interpreter=/usr/bin/python3
typo-host ansible_connection=local ansible_python_interpreter=/usr/bin/python3
INV
cat >$A/group_vars/all.yml <<VARS
keel_deb: $SHARE/keel.deb
keel_base: |
  lvm: {
    scanLVs: true
    globalFilter: reject: ["/dev/mapper/.*-(snap_)?(vm|base)--[0-9]+--disk--[0-9]+"]
  }
VARS
cat >$A/group_vars/hypervisors.yml <<'VARS'
keel_group: |
  volumeGroups: ansvg: thinPools: tpool: zero: false
VARS
hostvars() { # hostvars HOST FIELD: HOST's layer, with FIELD for its PVs
	cat >$A/host_vars/"$1".yml <<VARS
keel_pv: /dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd1
keel_host: |
  volumeGroups: ansvg: $2: ["{{ keel_pv }}"]
VARS
}
hostvars "$(hostname)" pvs
hostvars typo-host pv
# snap: what check mode and audit mode must leave alone.
snap() {
	sha256sum /etc/lvm/lvm.conf
	vgs --noheadings -o vg_name,seqno ansvg
	lvs --noheadings -o lv_name,lv_attr ansvg | awk '{ print $1, substr($2, 1, 5) substr($2, 7) }'
}
play() { # play NAME ARGS...: run the playbook, keep its output (NAME.ts: each line with its time), print its exit status
	local name=$1 rc t0=$SECONDS
	shift
	(cd $A && timeout 900 ansible-playbook -i inventory keel.yml "$@") 2>&1 |
		while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l" >>"$O/$name.ts"; printf '%s\n' "$l"; done >"$O/$name.txt"
	rc=${PIPESTATUS[0]}
	echo "time: ansible-playbook $name (exit $rc) took $((SECONDS - t0))s, done at ${SECONDS}s"
	if [ "$rc" = 124 ]; then # timed out: what was it waiting for?
		echo "ansible-playbook $name timed out in: $(grep -E '^(TASK|RUNNING HANDLER) ' "$O/$name.txt" | tail -1)"
		ps -eo pid,ppid,etimes,stat,wchan:24,args --forest | grep -v '\[' | tail -25
		systemctl list-jobs --no-pager
	fi
	return $rc
}
recap() { grep -E "^$1 +: " "$O/$2.txt" | tr -s ' '; } # recap HOST NAME: HOST's PLAY RECAP line
installed() { dpkg-query -W -f '${Status}' keel 2>/dev/null | grep -q 'install ok installed'; }
base=$(snap)
echo "time: host ready at ${SECONDS}s"

# 1. Check mode over both hosts: typo-host's layer says pv, not pvs.
play check --check --diff
grep -q 'fatal: \[typo-host\]: FAILED!.*pv: field not allowed' "$O/check.txt" &&
	awk '/^TASK /{t=$0} /^fatal: \[typo-host\]/{print t}' "$O/check.txt" | grep -q 'Keel | vet the desired state' &&
	ok "check mode, a typo in typo-host's host_vars: it fails at keel vet naming the field" ||
	fail "check mode, a typo: not refused by keel vet: $(grep -m3 -e fatal -e 'not allowed' "$O/check.txt" | tr '\n' ' ')"
case $(recap "$(hostname)" check) in
*" failed=0 "*) ok "check mode on a fresh host: the play passes for it" ;;
*) fail "check mode on a fresh host: $(recap "$(hostname)" check); $(grep -m3 -e "fatal: \[$(hostname)" "$O/check.txt" | tr '\n' ' ')" ;;
esac
# The dry run's unified diff, one line of it in Ansible's JSON list.
grep -qE '^ *" *\+.*scan_lvs *= *1' "$O/check.txt" && ok "check mode shows the lvm.conf diff (scan_lvs = 1)" ||
	fail "check mode: no lvm.conf diff in the output"
grep -q '\$ lvchange -Z n ansvg/tpool' "$O/check.txt" && ok "check mode shows keel plan's action on ansvg/tpool" ||
	fail "check mode: no plan for ansvg/tpool"
grep -q "$(hostname): keel_mode audit (check mode: as it would be), NOT compliant" "$O/check.txt" &&
	ok "check mode prints the compliance summary of the host" ||
	fail "check mode: no compliance summary"
installed && fail "check mode installed keel"
[ -e /etc/keel ] && fail "check mode created /etc/keel"
ls -d /tmp/ansible.*.keel 2>/dev/null && fail "check mode left its staging directory"
[ "$(snap)" = "$base" ] && ok "check mode changed nothing (keel not installed, lvm.conf, ansvg)" ||
	fail "check mode changed: $(diff <(echo "$base") <(snap) | grep '^[<>]' | tr -s ' \n' ' ')"

# 2. A run in audit mode.
if play audit --diff --limit "$(hostname)"; then
	ok "audit run: the play passes"
else
	fail "audit run: $(grep -m3 -e fatal -e FAILED "$O/audit.txt" | tr '\n' ' ')"
fi
installed && ok "audit run installed the .deb" || fail "audit run: keel not installed"
files=$(cd /etc/keel 2>/dev/null && ls *.cue | tr '\n' ' ')
[ "$files" = "00-base.cue 01-textfile.cue 10-group.cue 50-host.cue agent.cue " ] &&
	ok "audit run wrote the layers: $files" || fail "audit run: /etc/keel holds $files"
# A directory copy with a mode gives it to the directory too (a 0644 /etc/keel).
modes=$(stat -c %a /etc/keel/*.cue | sort -u | tr '\n' ' ')
[ "$modes" = "644 " ] && [ "$(stat -c %a /etc/keel)" = 755 ] && ok "audit run: /etc/keel is 0755, its drop-ins 0644" ||
	fail "audit run: modes of /etc/keel and its drop-ins: $(stat -c '%a %n' /etc/keel /etc/keel/*.cue | tr '\n' ' ')"
systemctl is-active --quiet keel.service && ok "audit run: keel.service is running" || fail "audit run: keel.service not running"
grep -q "$(hostname): keel_mode audit, NOT compliant" "$O/audit.txt" &&
	ok "audit run prints the compliance summary of the host" || fail "audit run: no compliance summary"
# The daemon's first pass, in audit mode, then the host must be as it was.
for i in $(seq 120); do
	case $(systemctl show -P StatusText keel.service) in "audit mode"*) break ;; esac
	sleep 1
done
[ "$(snap)" = "$base" ] && ok "audit run changed nothing on the host (lvm.conf, ansvg)" ||
	fail "audit run changed: $(diff <(echo "$base") <(snap) | grep '^[<>]' | tr -s ' \n' ' ')"

# 3. Converge.
if play converge --diff --limit "$(hostname)" -e keel_mode=converge; then
	ok "converge run: the play passes"
else
	fail "converge run: $(grep -m3 -e fatal -e FAILED "$O/converge.txt" | tr '\n' ' ')"
fi
rc=1
for i in $(seq 120); do
	keel check >"$O/check-after.txt" 2>&1 && { rc=0; break; }
	sleep 2
done
[ $rc = 0 ] && ok "after the converge run keel.service converged the host: keel check exits 0" ||
	fail "converge run: keel check still fails: $(head -5 "$O/check-after.txt" | tr '\n' ' ')"
grep -q 'scan_lvs *= *1' /etc/lvm/lvm.conf && ok "lvm.conf has scan_lvs = 1" || fail "lvm.conf lacks scan_lvs = 1"
exit $FAILS
