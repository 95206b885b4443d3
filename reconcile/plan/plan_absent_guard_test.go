package plan

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/schema"
)

// The capture of e2e/wipe/guard.sh after its setup, planned against its
// desired state: svg is behind a storage.cfg entry with shared 1, and
// tvg/vm-103-disk-0 and vm-104-disk-0 are thin LVs of tvg/pooln, created
// with -Z n.
func TestPlanAbsentGuards(t *testing.T) {
	s, err := hostio.ReadSnapshotFile("../apply/wipe/testdata/node-guard.txtar")
	if err != nil {
		t.Fatal(err)
	}
	h, err := probes.Probe(context.Background(), hostio.Replay(s))
	if err != nil {
		t.Fatal(err)
	}
	d, err := schema.NewLoader().Load("../../e2e/wipe/guard.cue")
	if err != nil {
		t.Fatal(err)
	}
	r := Plan(d.Config, h)
	got := keys(r.Findings)
	for _, want := range []string{"lv.absent_shared@svg/vm-200-disk-0", "thin.unzeroed_reuse@tvg/pooln",
		"lv.absent@tvg/vm-102-disk-0", "lv.absent@tvg/vm-103-disk-0", "lv.absent@gvg/old"} {
		if !slices.Contains(got, want) {
			t.Errorf("no %s in %q", want, got)
		}
	}
	// vm-103-disk-0 and vm-104-disk-0 are both in tvg/pooln: one finding.
	if n := len(slices.DeleteFunc(slices.Clone(got), func(k string) bool { return k != "thin.unzeroed_reuse@tvg/pooln" })); n != 1 {
		t.Errorf("thin.unzeroed_reuse@tvg/pooln raised %d times", n)
	}
	if slices.Contains(got, "lv.absent@svg/vm-200-disk-0") || slices.Contains(got, "thin.unzeroed_reuse@tvg/pool") {
		t.Errorf("findings %q", got)
	}
	for _, a := range r.Actions {
		if strings.HasPrefix(a.Object, "svg/") {
			t.Errorf("action %s planned in the shared vg svg", a.ID)
		}
	}
	for _, f := range r.Findings {
		switch f.Key() {
		case "lv.absent_shared@svg/vm-200-disk-0":
			if !strings.Contains(f.Remedy, "pvesm free san:vm-200-disk-0") || f.Severity != Error {
				t.Errorf("%s: %+v", f.Key(), f)
			}
		case "thin.unzeroed_reuse@tvg/pooln":
			if f.Remedy != "lvchange -Z y tvg/pooln" {
				t.Errorf("remedy %q", f.Remedy)
			}
		case "lv.absent@tvg/vm-102-disk-0":
			if !strings.Contains(f.Remedy, "discard in steps") {
				t.Errorf("a thin LV's removal says %q", f.Remedy)
			}
		}
	}
}
