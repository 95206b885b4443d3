//go:build e2e

package remedies

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// thinTableScript builds, twice, the state lvcreate --type thin-pool leaves
// when it is killed between the pool's table load and its resume: the pool
// kvg/tchurn committed with keel's creation tag, its _tdata and _tmeta
// active, and kvg-tchurn present with an inactive table only, which holds
// the components open. lvm2's own sequence is too brief to hit on purpose,
// so the script activates the pool, removes its device and loads the same
// table again without resuming it (dmsetup create --notable, dmsetup load).
// The first time it runs vg.inactive's remedy as keel check prints it; the
// second time keel apply.
const thinTableScript = `set -u
nv=$(disk nvme0) || exit 2
hd=$(disk hdd1) || exit 2
step pvcreate -q "$nv" "$hd" || exit 3
step vgcreate -q kvg "$nv" "$hd" || exit 3
mkdir -p /etc/keel || exit 3
cp /mnt/host/thin.cue /etc/keel/keel.cue || exit 3
half() {
	step lvcreate -y -q --type thin-pool -L 128M --chunksize 64K --addtag keel_create -n tchurn kvg || return 1
	local u t
	u=$(dmsetup info -c --noheadings -o uuid kvg-tchurn) && t=$(dmsetup table kvg-tchurn) || return 1
	step dmsetup remove kvg-tchurn || return 1
	step dmsetup create kvg-tchurn --notable -u "$u" || return 1
	step dmsetup load kvg-tchurn --table "$t" || return 1
	lvs -a --noheadings -o lv_name,lv_attr kvg | tee "$OUT/$1.lvs"
}
after() {
	"$KEEL" check --format json >"$OUT/$1.after.json"
	echo $? >"$OUT/$1.check.rc"
	lvs -a --noheadings -o lv_name,lv_attr,lv_tags kvg | tee "$OUT/$1.after.lvs"
}
half remedy || exit 4
"$KEEL" snapshot -o "$OUT/thin-inactive-table.txtar" || exit 5
"$KEEL" check --format json >"$OUT/vg.inactive.before.json"
"$KEEL" check >"$OUT/vg.inactive.before.txt"
awk '/^[A-Z]/ {f = ($2 == "vg.inactive")} f && $1 == "remedy:" {sub(/^ *remedy: */, ""); print; exit}' \
	"$OUT/vg.inactive.before.txt" >"$OUT/vg.inactive.sh"
cat "$OUT/vg.inactive.sh"
rc=0
bash "$OUT/vg.inactive.sh" </dev/null || rc=$?
echo "remedy exit $rc"
echo $rc >"$OUT/vg.inactive.rc"
after vg.inactive
step lvremove -y kvg/tchurn || exit 6
half apply || exit 7
rc=0
timeout -k 10 300 "$KEEL" apply -c /etc/keel >"$OUT/apply.txt" 2>&1 || rc=$?
cat "$OUT/apply.txt"
echo "apply exit $rc"
echo $rc >"$OUT/apply.rc"
after apply
exit 0
`

const thinTableDesired = `volumeGroups: kvg: {
	pvs: ["/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd1"]
	thinPools: tchurn: {size: "128M", chunkSize: "64K", create: true}
}
`

// TestThinPoolInactiveTable: a thin pool whose own device holds only an
// inactive table is brought up by vg.inactive's printed remedy and by keel
// apply, each ending with the pool active and, for keel apply, its creation
// tag dropped and nothing left to report.
func TestThinPoolInactiveTable(t *testing.T) {
	r := guest.Run(t, guest.Spec{
		Disks:   []guest.Disk{{Kind: guest.NVMe, Size: "4G", Serial: "nvme0"}, {Kind: guest.HDD, Size: "4G", Serial: "hdd1"}},
		Keel:    true,
		Files:   map[string][]byte{"thin.cue": []byte(thinTableDesired)},
		Script:  thinTableScript,
		Timeout: 6 * time.Minute,
	})
	if dir := os.Getenv("KEEL_REMEDIES_SNAPSHOT_DIR"); dir != "" {
		if b, err := r.File("thin-inactive-table.txtar"); err != nil {
			t.Errorf("keep the capture: %v", err)
		} else if err := os.WriteFile(filepath.Join(dir, "thin-inactive-table.txtar"), b, 0o644); err != nil {
			t.Errorf("keep the capture: %v", err)
		}
	}
	r.RequireOK(t)
	for _, run := range []string{"remedy", "apply"} {
		lvs, err := r.File(run + ".lvs")
		if err != nil {
			t.Fatal(err)
		}
		if a := lvAttr(string(lvs), "tchurn"); len(a) < 5 || a[4] != 'i' {
			t.Fatalf("%s: the state built has kvg/tchurn %q, want an inactive table (state i)", run, a)
		}
	}
	ran(t, r, "vg.inactive", "kvg")

	rc, err := r.File("apply.rc")
	if err != nil {
		t.Fatal(err)
	}
	if s := strings.TrimSpace(string(rc)); s != "0" {
		out, _ := r.File("apply.txt")
		t.Errorf("keel apply exited %s:\n%s", s, out)
	}
	after, err := r.File("apply.after.lvs")
	if err != nil {
		t.Fatal(err)
	}
	if a := lvAttr(string(after), "tchurn"); len(a) < 5 || a[4] != 'a' {
		t.Errorf("kvg/tchurn %q after keel apply, want active", a)
	}
	if strings.Contains(string(after), "keel_create") {
		t.Errorf("keel apply left the creation tag:\n%s", after)
	}
	rep := readReport(t, r, "apply.after.json")
	for _, f := range rep.Findings {
		t.Errorf("keel check after keel apply: %s %s: %s", f.ID, f.Object, f.Remedy)
	}
	if t.Failed() {
		t.Logf("guest output:\n%s", r.Output)
	}
}

// lvAttr returns the lv_attr of LV name in lvs output (name, attr, ...).
func lvAttr(lvs, name string) string {
	for _, line := range strings.Split(lvs, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == name {
			return f[1]
		}
	}
	return ""
}
