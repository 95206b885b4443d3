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

// thinTableScript builds, three times, the state lvcreate --type thin-pool
// leaves when it is killed between the pool's table load and its resume: the
// pool kvg/tchurn committed with keel's creation tag, its _tdata and _tmeta
// active, and kvg-tchurn present with an inactive table only, which holds
// the components open. lvm2's own sequence is too brief to hit on purpose,
// so the script activates the pool, removes its device and loads the same
// table again without resuming it (dmsetup create --notable, dmsetup load).
// The first time it runs vg.inactive's remedy as keel check prints it; the
// second time keel apply. Then, with a VM disk made on the pool (inactive),
// it leaves the pool's -tpool layer, where a pool in use keeps its
// thin-pool table, with an inactive table only, and runs the remedy again.
const thinTableScript = `set -u
nv=$(disk nvme0) || exit 2
hd=$(disk hdd1) || exit 2
step pvcreate -q "$nv" "$hd" || exit 3
step vgcreate -q kvg "$nv" "$hd" || exit 3
mkdir -p /etc/keel || exit 3
cp /mnt/host/thin.cue /etc/keel/keel.cue || exit 3
# half NAME DEVICE...: load the table of the last DEVICE again into a new
# device of the same UUID without resuming it, after removing every DEVICE
# (the pool's own device and, for a pool in use, its -tpool layer under it).
half() {
	local name=$1 u t d
	shift
	for d in "$@"; do :; done
	u=$(dmsetup info -c --noheadings -o uuid "$d") && t=$(dmsetup table "$d") || return 1
	for d in "$@"; do step dmsetup remove "$d" || return 1; done
	step dmsetup create "$d" --notable -u "$u" || return 1
	step dmsetup load "$d" --table "$t" || return 1
	lvs -a --noheadings -o lv_name,lv_attr kvg | tee "$OUT/$name.lvs"
}
` + remedyFn + `
lvsafter() { lvs -a --noheadings -o lv_name,lv_attr,lv_tags kvg | tee "$OUT/$1.after.lvs"; }
newpool() {
	step lvcreate -y -q --type thin-pool -L 128M --chunksize 64K --addtag keel_create -n tchurn kvg
}
newpool || exit 4
half remedy kvg-tchurn || exit 4
"$KEEL" snapshot -o "$OUT/thin-inactive-table.txtar" || exit 5
remedy remedy vg.inactive
lvsafter remedy
step lvremove -y kvg/tchurn || exit 6
newpool || exit 7
half apply kvg-tchurn || exit 7
rc=0
timeout -k 10 300 "$KEEL" apply -c /etc/keel >"$OUT/apply.txt" 2>&1 || rc=$?
cat "$OUT/apply.txt"
echo "apply exit $rc"
echo $rc >"$OUT/apply.rc"
"$KEEL" check --format json >"$OUT/apply.after.json"
lvsafter apply
# A pool in use: its thin-pool table sits in kvg-tchurn-tpool, under the
# pool's public device; a VM disk on it stays inactive, as on a host whose
# VM is stopped.
step lvcreate -y -q -V 64M -n vm-100-disk-0 kvg/tchurn || exit 8
step lvchange -an kvg/vm-100-disk-0 || exit 8
half inuse kvg-tchurn kvg-tchurn-tpool || exit 8
"$KEEL" snapshot -o "$OUT/thin-inactive-tpool.txtar" || exit 9
remedy inuse vg.inactive
lvsafter inuse
exit 0
`

const thinTableDesired = `volumeGroups: kvg: {
	pvs: ["/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd1"]
	thinPools: tchurn: {size: "128M", chunkSize: "64K", create: true}
}
`

// TestThinPoolInactiveTable: a thin pool whose thin-pool table is loaded
// but not live is brought up by vg.inactive's printed remedy and by keel
// apply, each ending with the pool active and, for keel apply, its creation
// tag dropped and nothing left to report; for a pool in use, by the remedy,
// which leaves the VM disk on it inactive.
func TestThinPoolInactiveTable(t *testing.T) {
	r := guest.Run(t, guest.Spec{
		Disks:   []guest.Disk{{Kind: guest.NVMe, Size: "4G", Serial: "nvme0"}, {Kind: guest.HDD, Size: "4G", Serial: "hdd1"}},
		Keel:    true,
		Files:   map[string][]byte{"thin.cue": []byte(thinTableDesired)},
		Script:  thinTableScript,
		Timeout: 6 * time.Minute,
	})
	if dir := os.Getenv("KEEL_REMEDIES_SNAPSHOT_DIR"); dir != "" {
		for _, name := range []string{"thin-inactive-table.txtar", "thin-inactive-tpool.txtar"} {
			if b, err := r.File(name); err != nil {
				t.Errorf("keep the capture: %v", err)
			} else if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Errorf("keep the capture: %v", err)
			}
		}
	}
	r.RequireOK(t)
	for _, run := range []string{"remedy", "apply", "inuse"} {
		lvs, err := r.File(run + ".lvs")
		if err != nil {
			t.Fatal(err)
		}
		if a := lvAttr(string(lvs), "tchurn"); len(a) < 5 || a[4] != 'i' {
			t.Fatalf("%s: the state built has kvg/tchurn %q, want an inactive table (state i)", run, a)
		}
	}
	ranAs(t, r, "remedy", "vg.inactive", "kvg")

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

	ranAs(t, r, "inuse", "vg.inactive", "kvg")
	inuse, err := r.File("inuse.after.lvs")
	if err != nil {
		t.Fatal(err)
	}
	if a := lvAttr(string(inuse), "tchurn"); len(a) < 5 || a[4] != 'a' {
		t.Errorf("the pool in use kvg/tchurn %q after the remedy, want active", a)
	}
	if a := lvAttr(string(inuse), "vm-100-disk-0"); len(a) < 5 || a[4] != '-' {
		t.Errorf("the remedy activated the VM disk kvg/vm-100-disk-0: %q", a)
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
