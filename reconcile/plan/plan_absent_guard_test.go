package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/schema"
)

// The capture of e2e/wipe/guard.sh after its setup, planned against its
// desired state: svg is behind a storage.cfg entry with shared 1, and
// tvg/vm-103-disk-0 and vm-104-disk-0 are thin LVs of tvg/pooln, created
// with -Z n: their removals are held, one finding each, and no action.
func TestPlanAbsentGuards(t *testing.T) {
	h := guardHost(t)
	d, err := schema.NewLoader().Load("../../e2e/wipe/guard.cue")
	if err != nil {
		t.Fatal(err)
	}
	r := Plan(d.Config, h)
	got := keys(r.Findings)
	for _, want := range []string{"lv.absent_shared@svg/vm-200-disk-0", "lv.absent_unzeroed_pool@tvg/vm-103-disk-0",
		"lv.absent_unzeroed_pool@tvg/vm-104-disk-0", "lv.absent@tvg/vm-102-disk-0", "lv.absent@gvg/old"} {
		if !slices.Contains(got, want) {
			t.Errorf("no %s in %q", want, got)
		}
	}
	for _, no := range []string{"lv.absent@svg/vm-200-disk-0", "lv.absent@tvg/vm-103-disk-0", "lv.absent@tvg/vm-104-disk-0",
		"thin.unzeroed_reuse@tvg/pooln", "thin.unzeroed_reuse@tvg/pool"} {
		if slices.Contains(got, no) {
			t.Errorf("%s in %q", no, got)
		}
	}
	for _, a := range r.Actions {
		if strings.HasPrefix(a.Object, "svg/") || strings.HasPrefix(a.Object, "tvg/vm-103") || strings.HasPrefix(a.Object, "tvg/vm-104") {
			t.Errorf("action %s planned for %s", a.ID, a.Object)
		}
	}
	for _, f := range r.Findings {
		switch f.Key() {
		case "lv.absent_shared@svg/vm-200-disk-0":
			if !strings.Contains(f.Remedy, "pvesm free san:vm-200-disk-0") || f.Severity != Error {
				t.Errorf("%s: %+v", f.Key(), f)
			}
		case "lv.absent_unzeroed_pool@tvg/vm-103-disk-0":
			if f.Remedy != "lvchange -Z y tvg/pooln, or set removal: allowUnzeroedThinReuse: true" || f.Severity != Error ||
				!strings.Contains(f.Message, "thin pool tvg/pooln does not zero new chunks") {
				t.Errorf("%s: %+v", f.Key(), f)
			}
		case "lv.absent@tvg/vm-102-disk-0":
			if !strings.Contains(f.Remedy, "discard in steps") {
				t.Errorf("a thin LV's removal says %q", f.Remedy)
			}
		}
	}
}

// With removal.allowUnzeroedThinReuse the same LVs are removed, and the pool
// is reported once (thin.unzeroed_reuse), a warning with the remedy.
func TestPlanAbsentUnzeroedOptIn(t *testing.T) {
	h := guardHost(t)
	d, err := schema.NewLoader().Load("../../e2e/wipe/guard.cue")
	if err != nil {
		t.Fatal(err)
	}
	d.Config.Removal.AllowUnzeroedThinReuse = true
	r := Plan(d.Config, h)
	got := keys(r.Findings)
	for _, want := range []string{"lv.absent@tvg/vm-103-disk-0", "lv.absent@tvg/vm-104-disk-0", "thin.unzeroed_reuse@tvg/pooln"} {
		if !slices.Contains(got, want) {
			t.Errorf("no %s in %q", want, got)
		}
	}
	if n := len(slices.DeleteFunc(slices.Clone(got), func(k string) bool { return k != "thin.unzeroed_reuse@tvg/pooln" })); n != 1 {
		t.Errorf("thin.unzeroed_reuse@tvg/pooln raised %d times", n)
	}
	if slices.ContainsFunc(got, func(k string) bool { return strings.HasPrefix(k, "lv.absent_unzeroed_pool@") }) {
		t.Errorf("held although opted in: %q", got)
	}
	for _, f := range r.Findings {
		if f.Key() == "thin.unzeroed_reuse@tvg/pooln" && (f.Remedy != "lvchange -Z y tvg/pooln" || f.Severity != Warning) {
			t.Errorf("%s: %+v", f.Key(), f)
		}
	}
}

// guardHost is the capture of e2e/wipe/guard.sh after its setup.
func guardHost(t *testing.T) *model.Host {
	t.Helper()
	return replayFile(t, "../apply/wipe/testdata/node-guard.txtar")
}

// The capture of e2e/wipe/wipemode.sh after its setup, against its desired
// state (removal.mode discard): vms/vm-100-disk-0 lies on the SSD added to
// the VG on VDO, so the finding and the action say it is zeroed, as the
// wipe will do; tvg/vm-103-disk-0 of tvg/pooln (zeroing off) is held.
func TestPlanAbsentWipeMode(t *testing.T) {
	h := replayFile(t, "../apply/wipe/testdata/node-wipemode.txtar")
	d, err := schema.NewLoader().Load("../../e2e/wipe/wipemode.cue")
	if err != nil {
		t.Fatal(err)
	}
	r := Plan(d.Config, h)
	var found int
	for _, f := range r.Findings {
		switch f.Key() {
		case "lv.absent@vms/vm-100-disk-0":
			found++
			if f.Remedy != "rename to del-vm-100-disk-0, zeroout in steps of 32M, lvremove" {
				t.Errorf("remedy %q", f.Remedy)
			}
		case "lv.absent_unzeroed_pool@tvg/vm-103-disk-0":
			found++
		}
	}
	if found != 2 {
		t.Errorf("findings %q", keys(r.Findings))
	}
	var summaries []string
	for _, a := range r.Actions {
		if strings.HasPrefix(a.ID, "lv.absent:") {
			summaries = append(summaries, a.Summary)
		}
	}
	if want := []string{"wipe (zeroout) and remove vms/vm-100-disk-0, as the desired state asks"}; !slices.Equal(summaries, want) {
		t.Errorf("removals %q, want %q", summaries, want)
	}
}
