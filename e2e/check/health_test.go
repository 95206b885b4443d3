//go:build e2e

package check

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// healthScript builds a thin pool by hand on the VG stacked on VDO (two thin
// layers) and a 64M thin pool written past its end (out of data space),
// checks them, and records the host as a node snapshot.
const healthScript = `set -uo pipefail
. /mnt/host/stacks.sh
nv=$(disk nvme0) || exit 2
hd=$(disk hdd1) || exit 2
lvm_conf_save
stack_vdo_thick "$nv" || exit 1
step lvcreate -y --type thin-pool --chunksize 512k -Z n -L 2G -n tpv vdovg || exit 1
step pvcreate -q "$hd" && step vgcreate -q thinvg "$hd" || exit 1
step lvcreate -y --type thin-pool --chunksize 64k -Z n -L 64M -n tpfull thinvg || exit 1
step lvchange --errorwhenfull y thinvg/tpfull || exit 1
step lvcreate -y -V 1G -n t1 --thinpool tpfull thinvg || exit 1
# Write past the pool's end: with --errorwhenfull y the writes fail at once.
dd if=/dev/urandom of=/dev/thinvg/t1 bs=1M count=96 oflag=direct status=none || echo "dd failed as expected"
dmsetup status thinvg-tpfull-tpool
rc=0
"$KEEL" check -c /mnt/host/desired/thin-on-vdo.cue --format json >"$OUT/health.json" || rc=$?
echo $rc >"$OUT/health.rc"
"$KEEL" snapshot -o "$OUT/thin-health.txtar"
stack_teardown "$nv" "$hd"
`

func TestCheckHealth(t *testing.T) {
	root := guest.RepoRoot(t)
	files := map[string][]byte{}
	for rel, as := range map[string]string{"e2e/scenarios/stacks.sh": "stacks.sh",
		"reconcile/plan/testdata/desired/thin-on-vdo.cue": "desired/thin-on-vdo.cue"} {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		files[as] = b
	}
	r := guest.Run(t, guest.Spec{
		Disks: []guest.Disk{{Kind: guest.NVMe, Size: "64G", Serial: "nvme0"}, {Kind: guest.HDD, Size: "8G", Serial: "hdd1"}},
		Files: files, Keel: true, Script: healthScript, Mem: "3G", Timeout: 10 * time.Minute,
	})
	r.RequireOK(t)
	js, err := r.File("health.json")
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	rcb, err := r.File("health.rc")
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, f := range rep.Findings {
		got = append(got, f.ID+"@"+f.Object)
	}
	sort.Strings(got)
	// Exact: the two thin layers, the full pool's state and usage, the
	// slab remainder every pool of the article's size has, and keel's
	// PV-scan rule for vdovg, which this scenario never writes; exit 1 (a
	// critical finding).
	want := []string{"activation.udev_rule@udev:" + pvRule, "thin.data_usage@thinvg/tpfull", "thin.health@thinvg/tpfull",
		"thin.on_vdo@vdovg/tpv", "vdo.slab_remainder@vdolab/vdopool"}
	if rc := strings.TrimSpace(string(rcb)); rc != "1" || !slices.Equal(got, want) {
		t.Errorf("keel check: exit %s, findings\n got %q\nwant exit 1 and %q", rc, got, want)
	}
	if dir := os.Getenv("KEEL_CHECK_SNAPSHOT_DIR"); dir != "" {
		b, err := r.File("thin-health.txtar")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "thin-health.txtar"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
