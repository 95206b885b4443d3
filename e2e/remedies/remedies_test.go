//go:build e2e

package remedies

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// ids are the findings whose remedies the test runs, in the order it runs
// them: the grow first, since the slab count it changes feeds the thick
// limit (overcommit) and the audit's thread layout.
var ids = []string{"vdo.slab_remainder", "vdo.overcommit", "vdo.threads", "vdo.max_discard"}

// script builds a 10G VDO pool with LVM's defaults (max_discard 1, ten
// threads) and a 20G VDO LV (above the 6G the pool holds thick, with 1.28g
// of slab remainder), a VG stacked on the VDO LV with one active LV (a VM
// disk), then runs each finding's printed remedy (remedyFn).
const script = `set -u
. /mnt/host/stacks.sh
nv=$(disk nvme0) || exit 2
lvm_conf_article || exit 3
step pvcreate -q "$nv" || exit 4
step vgcreate -q vg "$nv" || exit 4
step lvcreate -y --type vdo -L 10G -V 20G -n vdolv vg/vdopool || exit 5
step pvcreate -q /dev/vg/vdolv || exit 6
step vgcreate -q upper /dev/vg/vdolv || exit 6
step lvcreate -y -q -L 1G -n vm-100-disk-0 upper || exit 6
` + remedyFn + `for id in ` + "vdo.slab_remainder vdo.overcommit vdo.threads vdo.max_discard" + `; do
	remedy "$id" "$id" --audit
done
"$KEEL" check --audit || true
lvs -a -o lv_name,lv_size,lv_attr vg upper

# activation.pvscan_on_lvs: upper left inactive as a boot leaves it is
# Proxmox's normal state while nothing is declared in it; with a pool
# declared in it (keel vet refuses a thin pool on VDO, so a small VDO pool)
# the finding is raised, and its remedy (keel on the PATH as the package
# installs it, the desired state in /etc/keel) must activate the pool and
# never the guest disk next to it.
ln -sf "$KEEL" /usr/local/bin/keel || exit 20
mkdir -p /etc/keel || exit 20
step lvcreate -y --type vdo -L 3G -V 248M -n innerlv upper/innerpool --vdosettings slab_size_mb=128 || exit 21
step vgchange -an upper || exit 21
"$KEEL" check -c /mnt/host/upper-plain.cue --format json >"$OUT/activation-plain.json"
cp /mnt/host/upper-pool.cue /etc/keel/keel.cue || exit 22
"$KEEL" snapshot -o "$OUT/stacked-pool-inactive.txtar" || exit 23
remedy activation.pvscan_on_lvs activation.pvscan_on_lvs
lvs --noheadings -o lv_name,lv_attr upper >"$OUT/upper-after.txt"
cat "$OUT/upper-after.txt"
exit 0
`

// remedyFn defines the guest's shell function remedy NAME ID [keel check
// flags]: it takes finding ID's remedy from the text report (as an operator
// copies it), keeps the JSON report of the same state to compare, runs the
// remedy with bash and records its exit status and the JSON report
// afterwards, each in $OUT/NAME.* (ranAs reads them).
const remedyFn = `remedy() {
	local name=$1 id=$2
	shift 2
	echo "== $id"
	"$KEEL" check "$@" --format json >"$OUT/$name.before.json"
	"$KEEL" check "$@" >"$OUT/$name.before.txt"
	awk -v id="$id" '/^[A-Z]/ {f = ($2 == id)} f && $1 == "remedy:" {sub(/^ *remedy: */, ""); print; exit}' \
		"$OUT/$name.before.txt" >"$OUT/$name.sh"
	cat "$OUT/$name.sh"
	local rc=0
	bash "$OUT/$name.sh" </dev/null || rc=$?
	echo "remedy exit $rc"
	echo $rc >"$OUT/$name.rc"
	"$KEEL" check "$@" --format json >"$OUT/$name.after.json"
}
`

// The desired states of the activation step: vg as the remedies left it
// (10G grown by 2784M, the VDO LV reduced to 10216M).
const upperPlain = `volumeGroups: {
	vg: {
		pvs: ["/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0"]
		vdoPools: vdopool: {lv: "vdolv", size: "13024M", virtualSize: "10216M"}
	}
	upper: pvs: ["/dev/vg/vdolv"]
}
`

const upperPool = `volumeGroups: {
	vg: {
		pvs: ["/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0"]
		vdoPools: vdopool: {lv: "vdolv", size: "13024M", virtualSize: "10216M"}
	}
	upper: {
		pvs: ["/dev/vg/vdolv"]
		vdoPools: innerpool: {lv: "innerlv", size: "3G", virtualSize: "248M", slabSize: "128M"}
	}
}
`

type report struct {
	Findings []struct {
		ID     string `json:"id"`
		Object string `json:"object"`
		Remedy string `json:"remedy"`
	} `json:"findings"`
}

func readReport(t *testing.T, r *guest.Result, name string) report {
	t.Helper()
	b, err := r.File(name)
	if err != nil {
		t.Fatalf("%v; output tail:\n%s", err, r.Output)
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, b)
	}
	return rep
}

// raised returns the objects that carry finding id.
func (rep report) raised(id string) []string {
	var out []string
	for _, f := range rep.Findings {
		if f.ID == id {
			out = append(out, f.Object)
		}
	}
	return out
}

func (rep report) remedy(id string) string {
	for _, f := range rep.Findings {
		if f.ID == id {
			return f.Remedy
		}
	}
	return ""
}

// ran checks one remedy of the scenario: raised once before, the command
// run is the JSON report's remedy byte for byte, it exited 0, and keel check
// no longer raises the finding.
func ran(t *testing.T, r *guest.Result, id, object string) {
	t.Helper()
	ranAs(t, r, id, id, object)
}

// ranAs is ran for a scenario that wrote its files under name instead of
// the finding's ID (one finding's remedy run in several states).
func ranAs(t *testing.T, r *guest.Result, name, id, object string) {
	t.Helper()
	before := readReport(t, r, name+".before.json")
	if objs := before.raised(id); len(objs) != 1 || objs[0] != object {
		t.Errorf("%s before its remedy raised on %v, want [%s]", id, objs, object)
		return
	}
	printed, err := r.File(name + ".sh")
	if err != nil {
		t.Fatal(err)
	}
	want := before.remedy(id)
	if got := strings.TrimSuffix(string(printed), "\n"); got != want {
		t.Errorf("%s: ran %q, the JSON report's remedy is %q", id, got, want)
	}
	rc, err := r.File(name + ".rc")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(rc)) != "0" {
		t.Errorf("remedy of %s exited %s: %s", id, strings.TrimSpace(string(rc)), want)
	}
	if objs := readReport(t, r, name+".after.json").raised(id); len(objs) != 0 {
		t.Errorf("after its remedy %q keel check still raises %s on %v", want, id, objs)
	}
	t.Logf("%s on %s: ran %q, exit %s", id, object, want, strings.TrimSpace(string(rc)))
}

// keepCapture copies the snapshot of the stacked VG with its declared pool
// inactive into $KEEL_REMEDIES_SNAPSHOT_DIR when it is set, as a fixture
// for reconcile/plan/testdata/snapshots.
func keepCapture(t *testing.T, r *guest.Result) {
	dir := os.Getenv("KEEL_REMEDIES_SNAPSHOT_DIR")
	if dir == "" {
		return
	}
	b, err := r.File("stacked-pool-inactive.txtar")
	if err != nil {
		t.Errorf("keep the capture: %v", err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, "stacked-pool-inactive.txtar"), b, 0o644); err != nil {
		t.Errorf("keep the capture: %v", err)
	}
}

func TestRemediesWorkAsPrinted(t *testing.T) {
	stacks, err := os.ReadFile(filepath.Join(guest.RepoRoot(t), "e2e", "scenarios", "stacks.sh"))
	if err != nil {
		t.Fatal(err)
	}
	r := guest.Run(t, guest.Spec{
		Disks: []guest.Disk{{Kind: guest.NVMe, Size: "20G", Serial: "nvme0"}},
		Keel:  true,
		Files: map[string][]byte{"stacks.sh": stacks,
			"upper-plain.cue": []byte(upperPlain), "upper-pool.cue": []byte(upperPool)},
		Script:  script,
		Timeout: 8 * time.Minute,
	})
	keepCapture(t, r)
	r.RequireOK(t)
	t.Logf("boot: %s", r.Wall.Round(time.Second))
	objects := map[string]string{"vdo.slab_remainder": "vg/vdopool", "vdo.overcommit": "vg/vdolv",
		"vdo.threads": "vg/vdopool", "vdo.max_discard": "vg/vdopool"}
	for _, id := range ids {
		ran(t, r, id, objects[id])
	}

	if objs := readReport(t, r, "activation-plain.json").raised("activation.pvscan_on_lvs"); len(objs) != 0 {
		t.Errorf("upper inactive with nothing declared in it raised activation.pvscan_on_lvs on %v", objs)
	}
	ran(t, r, "activation.pvscan_on_lvs", "upper")
	lvs, err := r.File("upper-after.txt")
	if err != nil {
		t.Fatal(err)
	}
	attr := map[string]string{}
	for _, line := range strings.Split(string(lvs), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			attr[f[0]] = f[1]
		}
	}
	if a := attr["innerlv"]; len(a) < 5 || a[4] != 'a' {
		t.Errorf("upper/innerlv not active after the remedy: %q", a)
	}
	if a := attr["vm-100-disk-0"]; len(a) < 5 || a[4] != '-' {
		t.Errorf("the remedy activated the guest disk upper/vm-100-disk-0: %q", a)
	}
	if t.Failed() {
		t.Logf("guest output:\n%s", r.Output)
	}
}
