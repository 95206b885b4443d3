package removal

import (
	"errors"
	"strings"
	"testing"
)

// node-deps.txtar, blkid-pvhold.txt and blkid-fsdisk.txt were recorded by
// e2e/wipe/reuse.sh in the test guest (KEEL_WIPE_SNAPSHOT_DIR): vmdata holds
// a snapshot origin (origin, with origin-snap), a read-only external origin
// (extorig) of the thin LV extthin in tpool, pvhold carrying the PV of the
// VG upper that LVM does not list (scan_lvs=0), and fsdisk with ext4.
var depsDecl = Declared{"vmdata": {"vm-101-disk-0", "vm-103-disk-0"}}

func TestPlanRefusesDependentsOnRecordedHost(t *testing.T) {
	o := recorded(t, "node-deps.txtar")
	for name, want := range map[string]string{
		"vmdata/origin":  "is the origin of snapshot(s) vmdata/origin-snap",
		"vmdata/extorig": "is the external origin of thin LV(s) vmdata/extthin",
	} {
		targets, err := Plan(o.Host, depsDecl, Request{Names: []string{name}})
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), want) || len(targets) != 0 {
			t.Errorf("%s: got %v %+v, want a refusal containing %q", name, err, targets, want)
		}
	}
	// What depends on nothing is planned: the snapshot itself, the thin LV
	// made from the external origin, and the LV whose PV label LVM does not
	// list (only its content tells, see TestCheckContent).
	for _, name := range []string{"vmdata/origin-snap", "vmdata/extthin", "vmdata/pvhold", "vmdata/fsdisk"} {
		if targets, err := Plan(o.Host, depsDecl, Request{Names: []string{name}}); err != nil || len(targets) != 1 {
			t.Errorf("%s: got %v %+v, want one target", name, err, targets)
		}
	}
}
