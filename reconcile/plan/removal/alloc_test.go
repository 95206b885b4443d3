package removal

import (
	"strings"
	"testing"
)

// On the capture of e2e/wipe/scenario.sh (vdolab/thin-1 in vdolab/tpool,
// zeroing on; vms stacked on the VDO LV vdolab/vdolv): a thin LV asked to be
// zeroed is discarded instead, and a zero-fill over VDO is said to allocate
// nothing there.
func TestPlanThinLVIsDiscardedNeverZeroFilled(t *testing.T) {
	o := recorded(t, "node-setup.txtar")
	if p := o.stack.Pools["vdolab/tpool"]; p.Kind != "thin" || !p.Zero || p.Chunk != 64<<10 || !p.Known {
		t.Fatalf("thin pool from the capture: %+v", p)
	}
	targets, err := Plan(o.Host, scenarioDecl, Request{Names: []string{"vdolab/thin-1"}, Mode: ModeZeroOut, RequireAbsent: true, Known: seen(scenarioDecl)})
	if err != nil {
		t.Fatal(err)
	}
	tg := targets[0]
	if tg.Mode != ModeDiscard || !tg.NoZeroFill || tg.DiscardAfter {
		t.Fatalf("thin target %+v", tg)
	}
	notes := strings.Join(tg.Notes, "\n")
	if !strings.Contains(notes, "discarding it instead of zero-filling") || !strings.Contains(notes, "vdolab/tpool") {
		t.Errorf("notes %q", notes)
	}
	if strings.Contains(notes, "lvchange -Z y") {
		t.Errorf("zeroing is on in vdolab/tpool, yet: %q", notes)
	}
}

func TestPlanZeroFillOverVDOAllocatesNothing(t *testing.T) {
	o := recorded(t, "node-setup.txtar")
	targets, err := Plan(o.Host, scenarioDecl, Request{Names: []string{"vms/vm-100-disk-0"}, Mode: ModeZeroOut, RequireAbsent: true, Known: seen(scenarioDecl)})
	if err != nil {
		t.Fatal(err)
	}
	tg := targets[0]
	if tg.Mode != ModeZeroOut || !tg.DiscardAfter {
		t.Fatalf("target %+v", tg)
	}
	if notes := strings.Join(tg.Notes, "\n"); !strings.Contains(notes, "allocates nothing in vdo pool vdolab/vpool") {
		t.Errorf("notes %q", notes)
	}
}

// The walk down the stack on the capture: a thin LV's fill is bounded by
// what it has not mapped yet, and goes on to the pool's data LV (on a disk,
// so nothing more).
func TestZeroFillThinBound(t *testing.T) {
	o := recorded(t, "node-setup.txtar")
	fill := map[string]uint64{}
	lv := o.LVs["vdolab/thin-1"]
	o.stack.zeroFill(o, "vdolab/thin-1", lv.Size, 0, fill)
	mapped := o.stack.Mapped["vdolab/thin-1"]
	if len(fill) != 1 || fill["vdolab/tpool"] != lv.Size-mapped {
		t.Fatalf("fill %v, want %d in vdolab/tpool (size %d, mapped %d)", fill, lv.Size-mapped, lv.Size, mapped)
	}
	fill = map[string]uint64{}
	o.stack.zeroFill(o, "vdolab/keep", o.LVs["vdolab/keep"].Size, 0, fill)
	if len(fill) != 0 {
		t.Fatalf("a linear LV on a disk allocates %v", fill)
	}
}
