#!/usr/bin/env bash
# The shipped Ansible playbook and role (packaging/integrations/ansible),
# run by Debian's ansible-core with a local connection in the systemd guest,
# as an operator rolls keel out: check mode on a fresh host, a run in audit
# mode, then converge (e2e/audit, TestAnsibleRollout).
#
# The inventory layers the desired state as docs/operations.md does: the
# base (lvm scan_lvs, the global_filter) in group_vars/all, the group's thin-pool setting in
# group_vars/hypervisors, the host's VG in host_vars, its PV from another
# host variable (the layers are templated). The host drifts from it:
# lvm.conf lacks scan_lvs = 1 and the thin pool zeroes.
#
# 1. check mode, a typo in the host layer: the play fails at keel vet with
#    keel's message naming the field, and nothing is installed;
# 2. check mode: the plan, the lvm.conf diff and the compliance summary are
#    printed, nothing is installed, lvm.conf and the VG are as they were;
# 3. a run: the .deb installed, the layers in /etc/keel, keel.service
#    running in audit mode, the summary printed, the host unchanged;
# 4. a run with keel_mode=converge: keel.service converges the host and
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
hostvars() { # hostvars FIELD: the host layer, with FIELD for its PVs
	cat >$A/host_vars/"$(hostname)".yml <<VARS
keel_pv: /dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd1
keel_host: |
  volumeGroups: ansvg: $1: ["{{ keel_pv }}"]
VARS
}
# snap: what check mode and audit mode must leave alone.
snap() {
	sha256sum /etc/lvm/lvm.conf
	vgs --noheadings -o vg_name,seqno ansvg
	lvs --noheadings -o lv_name,lv_attr ansvg | awk '{ print $1, substr($2, 1, 5) substr($2, 7) }'
}
play() { # play NAME ARGS...: run the playbook, keep its output, print its exit status
	local name=$1 rc=0
	shift
	(cd $A && timeout 900 ansible-playbook -i inventory keel.yml "$@") >"$O/$name.txt" 2>&1 || rc=$?
	echo "time: ansible-playbook $name (exit $rc) done at ${SECONDS}s"
	return $rc
}
installed() { dpkg-query -W -f '${Status}' keel 2>/dev/null | grep -q 'install ok installed'; }
base=$(snap)
echo "time: host ready at ${SECONDS}s"

# 1. A typo in the host layer (pv instead of pvs).
hostvars pv
if play check-typo --check --diff; then
	fail "check mode passed a host layer with a typo"
elif grep -q 'pv: field not allowed' "$O/check-typo.txt" && grep -q 'TASK \[keel : Keel | vet the desired state\]' "$O/check-typo.txt"; then
	ok "check mode, a typo in host_vars: the play fails at keel vet naming the field"
else
	fail "check mode, a typo: not refused by keel vet: $(grep -m3 -e fatal -e 'not allowed' "$O/check-typo.txt" | tr '\n' ' ')"
fi
installed && fail "check mode installed keel"

# 2. Check mode on the fresh host.
hostvars pvs
if play check --check --diff; then
	ok "check mode on a fresh host: the play passes"
else
	fail "check mode on a fresh host: $(grep -m3 -e fatal -e FAILED "$O/check.txt" | tr '\n' ' ')"
fi
# The dry run's unified diff, one line of it in Ansible's JSON list.
grep -qE '^ *" *\+.*scan_lvs *= *1' "$O/check.txt" && ok "check mode shows the lvm.conf diff (scan_lvs = 1)" ||
	fail "check mode: no lvm.conf diff in the output"
grep -q 'ansvg/tpool' "$O/check.txt" && ok "check mode shows keel plan's action on ansvg/tpool" ||
	fail "check mode: no plan for ansvg/tpool"
grep -q "$(hostname): keel_mode audit (check mode: as it would be), NOT compliant" "$O/check.txt" &&
	ok "check mode prints the compliance summary of the host" ||
	fail "check mode: no compliance summary"
installed && fail "check mode installed keel"
[ -e /etc/keel ] && fail "check mode created /etc/keel"
ls -d /tmp/ansible.*.keel 2>/dev/null && fail "check mode left its staging directory"
[ "$(snap)" = "$base" ] && ok "check mode changed nothing (keel not installed, lvm.conf, ansvg)" ||
	fail "check mode changed: $(diff <(echo "$base") <(snap) | grep '^[<>]' | tr -s ' \n' ' ')"

# 3. A run in audit mode.
if play audit --diff; then
	ok "audit run: the play passes"
else
	fail "audit run: $(grep -m3 -e fatal -e FAILED "$O/audit.txt" | tr '\n' ' ')"
fi
installed && ok "audit run installed the .deb" || fail "audit run: keel not installed"
files=$(cd /etc/keel 2>/dev/null && ls *.cue | tr '\n' ' ')
[ "$files" = "00-base.cue 01-textfile.cue 10-group.cue 50-host.cue agent.cue " ] &&
	ok "audit run wrote the layers: $files" || fail "audit run: /etc/keel holds $files"
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

# 4. Converge.
if play converge --diff -e keel_mode=converge; then
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
