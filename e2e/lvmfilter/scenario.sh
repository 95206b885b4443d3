# lvmfilter scenario (run by lvmfilter_test.go in the guest).
#
# 1. A VG stacked on an LV (vdovg on /dev/vdolab/vdolv), a Proxmox-style VM
#    disk LV vdovg/vm-100-disk-0 holding the guest's own PV and VG guestvg,
#    scan_lvs = 1. For each filter in /mnt/host/filters/NAME.conf, lvm.conf
#    gets that global_filter; vgs, keel check --audit and keel snapshot run.
# 2. Every pattern in /mnt/host/corpus.txt is given to LVM alone as
#    global_filter = [ "r|PATTERN|" ]; its exit status goes to corpus.rc.
# 3. keel apply of /mnt/host/thin.cue (a VG and a thin pool with sizes in
#    bare bytes); the pool LVM made goes to thin.lvs.
# 4. keel's lvmconfig cache, before 3 (see there).
set -uo pipefail
nv=$(disk nvme0) hd=$(disk hdd1)
fail=0
run() { "$@" || { echo "step failed: $*" >&2; fail=1; }; }

cp /etc/lvm/lvm.conf /etc/lvm/lvm.conf.stock
# conf FILTER: stock lvm.conf plus scan_lvs = 1, no devices file, and the
# given global_filter (none when empty).
conf() {
	cp /etc/lvm/lvm.conf.stock /etc/lvm/lvm.conf
	{
		printf '\ndevices {\n\tscan_lvs = 1\n\tuse_devicesfile = 0\n'
		[ -z "$1" ] || printf '\tglobal_filter = %s\n' "$1"
		printf '}\n'
	} >>/etc/lvm/lvm.conf
}

# 1. The stack.
conf ""
run pvcreate -y "$nv"
run vgcreate vdolab "$nv"
run lvcreate -y -L 1G -n vdolv vdolab
run pvcreate -y /dev/vdolab/vdolv
run vgcreate vdovg /dev/vdolab/vdolv
run lvcreate -y -L 256M -n vm-100-disk-0 vdovg
run pvcreate -y /dev/vdovg/vm-100-disk-0
run vgcreate guestvg /dev/vdovg/vm-100-disk-0
run lvcreate -y -L 64M -n root guestvg
vgs -o vg_name,pv_name --noheadings | tee "$OUT/vgs.nofilter"
# Every name of the VM disk LV under /dev (LVM's aliases come from these).
dm=$(basename "$(readlink -f /dev/vdovg/vm-100-disk-0)")
find /dev -lname "*$dm" -o -name "$dm" | sort | tee "$OUT/aliases.txt"

for f in /mnt/host/filters/*.conf; do
	name=$(basename "$f" .conf)
	conf "$(cat "$f")"
	echo "== $name: $(cat "$f")"
	rc=0
	vgs -o vg_name --noheadings >"$OUT/vgs.$name" 2>"$OUT/vgs.$name.err" || rc=$?
	echo $rc >"$OUT/vgs.$name.rc"
	sed 's/^ */   /' "$OUT/vgs.$name"
	rc=0
	"$KEEL" check --audit --format json >"$OUT/audit.$name.json" 2>"$OUT/audit.$name.err" || rc=$?
	echo $rc >"$OUT/audit.$name.rc"
	run "$KEEL" snapshot -o "$OUT/snapshot.$name.txtar"
done
conf ""

# 2. The regex corpus, one pattern at a time. In a double-quoted lvm.conf
#    string only \" and \\ are escapes, so a backslash is written twice.
: >"$OUT/corpus.rc"
while IFS= read -r p; do
	esc=${p//\\/\\\\}
	rc=0
	pvs --config "devices { global_filter = [ \"r|$esc|\" ] }" >/dev/null 2>>"$OUT/corpus.err" || rc=$?
	echo "$rc" >>"$OUT/corpus.rc"
done </mnt/host/corpus.txt

# 4. keel's lvmconfig cache (cmd/keel/internal/lvmcfgcache): a shim first
#    in PATH logs each lvmconfig that runs. Three keel status with lvm.conf
#    unchanged, then lvm.conf edited (scan_lvs 1 -> 0) and two more.
mkdir -p /tmp/shim
printf '#!/bin/sh\necho "$*" >>/tmp/lvmconfig.runs\nexec %s "$@"\n' "$(command -v lvmconfig)" >/tmp/shim/lvmconfig
chmod +x /tmp/shim/lvmconfig
conf ""
: >/tmp/lvmconfig.runs
for i in 1 2 3; do PATH=/tmp/shim:$PATH run "$KEEL" status --format json >"$OUT/cache.status.same$i.json"; done
cp /tmp/lvmconfig.runs "$OUT/cache.runs.same"
sed -i 's/^\tscan_lvs = 1$/\tscan_lvs = 0/' /etc/lvm/lvm.conf
: >/tmp/lvmconfig.runs
for i in 1 2; do PATH=/tmp/shim:$PATH run "$KEEL" status --format json >"$OUT/cache.status.edited$i.json"; done
cp /tmp/lvmconfig.runs "$OUT/cache.runs.edited"
conf ""

# 3. A thin pool declared in bare bytes.
rc=0
timeout 300 "$KEEL" apply -c /mnt/host/thin.cue --command-log "$OUT/thin.cmds" >"$OUT/thin.apply" 2>&1 || rc=$?
echo $rc >"$OUT/thin.apply.rc"
tail -20 "$OUT/thin.apply"
lvs --units b --nosuffix --noheadings -o lv_name,segtype,lv_size,chunk_size thinvg | tee "$OUT/thin.lvs"
exit $fail
