package removal

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/reconcile/state"
)

// The identity gate on the recorded host (node-setup.txtar, captured in the
// test guest): vms/vm-100-disk-0 is absent in e2e/wipe/wipe.cue, and its
// real lv_uuid and lv_time decide.
func TestPlanIdentityOnRecordedHost(t *testing.T) {
	o := recorded(t, "node-setup.txtar")
	const name = "vms/vm-100-disk-0"
	lv := o.LVs[name]
	if lv.UUID == "" || created(lv).IsZero() {
		t.Fatalf("%s: uuid %q created %v: the model must carry lv_uuid and lv_time", name, lv.UUID, created(lv))
	}
	before, after := created(lv).Add(-time.Hour), created(lv).Add(time.Hour)
	other := state.Binding{UUID: "AAAAAA-0000-0000-0000-0000-0000-000000", Started: before, Removed: before}
	for _, c := range []struct {
		name  string
		req   Request
		want  string // "" = planned; else a refusal containing it
		bound bool   // the target carries the LV's identity
	}{
		{"daemon rule, no record (first sight not written)", Request{RequireAbsent: true}, "no record of when it first saw", false},
		{"daemon rule, no record, pinned to it", Request{RequireAbsent: true, Pins: map[string]string{name: lv.UUID}}, "", true},
		{"daemon rule, declared before it existed, pinned to it", Request{RequireAbsent: true, Pins: map[string]string{name: lv.UUID}, Known: map[string]state.Absent{name: {FirstSeen: before}}}, "", true},
		{"daemon rule, declared after, pinned to another LV", Request{RequireAbsent: true, Pins: map[string]string{name: "AAAAAA-0000-0000-0000-0000-0000-000000"}, Known: map[string]state.Absent{name: {FirstSeen: after}}}, "pins uuid AAAAAA", false},
		{"daemon rule, declared before it existed", Request{RequireAbsent: true, Known: map[string]state.Absent{name: {FirstSeen: before}}}, "lv.absent_reappeared", false},
		{"daemon rule, declared after", Request{RequireAbsent: true, Known: map[string]state.Absent{name: {FirstSeen: after}}}, "", true},
		{"daemon rule, another LV removed under the name", Request{RequireAbsent: true, Known: map[string]state.Absent{name: {FirstSeen: after, Bound: []state.Binding{other}}}}, "keel wipe " + name, false},
		{"daemon rule, state unreadable", Request{RequireAbsent: true, Held: "state x: corrupt"}, "state cannot be read", false},
		{"by hand, another LV removed under the name", Request{Known: map[string]state.Absent{name: {FirstSeen: after, Bound: []state.Binding{other}}}}, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.req.Names, c.req.Mode = []string{name}, ModeDiscard
			targets, err := Plan(o.Host, scenarioDecl, c.req)
			if c.want != "" {
				if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) || len(targets) != 0 {
					t.Fatalf("got %v %+v, want a refusal containing %q", err, targets, c.want)
				}
				return
			}
			if err != nil || len(targets) != 1 {
				t.Fatalf("got %v %+v, want one target", err, targets)
			}
			if tg := targets[0]; tg.UUID != lv.UUID || !tg.Created.Equal(created(lv)) {
				t.Errorf("target identity %q %v, want %q %v", tg.UUID, tg.Created, lv.UUID, created(lv))
			}
		})
	}
}

// A del-* LV is resumed only when it is the LV bound to its name.
func TestPlanResumeChecksIdentity(t *testing.T) {
	o := recorded(t, "node-killed.txtar")
	del := o.LVs["vms/del-big"]
	delCreated := created(del)
	for _, c := range []struct {
		name   string
		known  map[string]state.Absent
		resume bool
	}{
		{"no record (keel wipe by hand of a name not absent)", nil, true},
		{"bound to it", map[string]state.Absent{"vms/big": {FirstSeen: delCreated, Bound: []state.Binding{{UUID: del.UUID, Started: delCreated}}}}, true},
		{"bound to another LV", map[string]state.Absent{"vms/big": {FirstSeen: delCreated, Bound: []state.Binding{{UUID: "other", Started: delCreated}}}}, false},
		{"created after first sight", map[string]state.Absent{"vms/big": {FirstSeen: delCreated.Add(-time.Minute)}}, false},
	} {
		targets, err := Plan(o.Host, scenarioDecl, Request{Mode: ModeDiscard, Known: c.known})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := len(targets) == 1 && targets[0].Resume; got != c.resume {
			t.Errorf("%s: resumed %v (targets %+v), want %v", c.name, got, targets, c.resume)
		}
	}
}
