package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/plan"
)

// fakeClock advances by exactly the requested duration whenever something
// waits on it, so backoff and rate limiting are measured, not slept.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func newClock() *fakeClock { return &fakeClock{now: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.waits = append(c.waits, d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// recRunner records every command and answers from canned results keyed by
// the command line; an unknown command succeeds with no output.
type recRunner struct {
	mu      sync.Mutex
	answers map[string]hostio.Result
	fail    map[string]bool
	ran     []string
}

func (r *recRunner) Run(_ context.Context, c hostio.Cmd) (hostio.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ran = append(r.ran, c.String())
	if res, ok := r.answers[c.String()]; ok {
		return res, nil
	}
	if r.fail[c.Name] {
		return hostio.Result{ExitCode: 5, Stderr: []byte("failed")}, nil
	}
	return hostio.Result{}, nil
}

// readOnly names the commands the executor runs to look, not to change.
var readOnly = map[string]bool{"blkid": true, "pvs": true, "lvs": true}

func (r *recRunner) mutating() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.ran {
		if !readOnly[strings.Fields(c)[0]] {
			out = append(out, c)
		}
	}
	return out
}

// captured loads a command result recorded in the test guest by
// e2e/apply/capture.sh: NAME.out, NAME.err and NAME.rc.
func captured(t *testing.T, name string) hostio.Result {
	t.Helper()
	read := func(ext string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name+ext))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	rc, err := strconv.Atoi(strings.TrimSpace(string(read(".rc"))))
	if err != nil {
		t.Fatal(err)
	}
	return hostio.Result{Stdout: read(".out"), Stderr: read(".err"), ExitCode: rc}
}

// host is a fake host: a finding stays present until an action remedying
// it has been applied `fixAfter` times (0: never fixed).
type host struct {
	mu       sync.Mutex
	present  map[string]plan.Finding
	applied  map[string]int
	fixAfter int
}

func (h *host) reprobe(_ context.Context, a plan.Action) ([]plan.Finding, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.applied[a.ID]++
	if h.fixAfter > 0 && h.applied[a.ID] >= h.fixAfter {
		for _, k := range a.Remedies {
			delete(h.present, k)
		}
	}
	var out []plan.Finding
	for _, f := range h.present {
		out = append(out, f)
	}
	return out, nil
}

func (h *host) findings() []plan.Finding {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []plan.Finding
	for _, f := range h.present {
		out = append(out, f)
	}
	return out
}

func vdoFinding(observed string) plan.Finding {
	return plan.Finding{ID: "vdo.compression", Severity: plan.Warning, Object: "vg0/vpool", Expected: "on", Observed: observed}
}

func compressionAction() plan.Action {
	f := vdoFinding("off")
	return plan.Action{
		ID: "vdo.compression:vg0/vpool", Kind: plan.KindCommand, Class: plan.Live,
		Object: "vg0/vpool", Summary: "enable compression",
		Commands: [][]string{{"lvchange", "--compression", "y", "vg0/vpool"}},
		Remedies: []string{f.Key()},
	}
}

// harness is an Executor whose Apply calls run in one mode and verify
// against the fake host.
type harness struct {
	*Executor
	mode   Mode
	verify Verify
}

func (x *harness) Apply(ctx context.Context, actions []plan.Action, findings []plan.Finding) (Report, error) {
	return x.Executor.Apply(ctx, actions, findings, x.mode, x.verify)
}

func setup(fixAfter int, opts Options, mode Mode) (*harness, *recRunner, *host, *fakeClock) {
	f := vdoFinding("off")
	h := &host{present: map[string]plan.Finding{f.Key(): f}, applied: map[string]int{}, fixAfter: fixAfter}
	r := &recRunner{answers: map[string]hostio.Result{}, fail: map[string]bool{}}
	clk := newClock()
	e := New(r, opts)
	e.Clock = clk
	return &harness{Executor: e, mode: mode, verify: h.reprobe}, r, h, clk
}

func TestConvergesThenSecondPassRunsNothing(t *testing.T) {
	e, r, h, _ := setup(1, Options{}, Mode{})
	ctx := context.Background()
	rep, err := e.Apply(ctx, []plan.Action{compressionAction()}, h.findings())
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Results[0]; got.Status != Converged || got.Attempts != 1 {
		t.Fatalf("first pass: %+v", got)
	}
	if m := r.mutating(); len(m) != 1 || m[0] != "lvchange --compression y vg0/vpool" {
		t.Fatalf("mutating commands: %q", m)
	}
	// Second pass: the planner, having re-probed, has nothing left to do.
	r.ran = nil
	rep, err = e.Apply(ctx, nil, h.findings())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 0 || len(r.mutating()) != 0 {
		t.Fatalf("second pass ran %q, results %+v", r.mutating(), rep.Results)
	}
}

func TestNotConvergingBacksOffThenStuck(t *testing.T) {
	e, r, h, clk := setup(0, Options{MaxAttempts: 4, Backoff: time.Second, MaxBackoff: 3 * time.Second, Limit: 100, Burst: 100}, Mode{})
	ctx := context.Background()
	a := compressionAction()
	rep, _ := e.Apply(ctx, []plan.Action{a}, h.findings())
	res := rep.Results[0]
	if res.Status != Stuck || res.Attempts != 4 {
		t.Fatalf("got %+v", res)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}
	if len(clk.waits) != len(want) {
		t.Fatalf("waits %v, want %v", clk.waits, want)
	}
	for i := range want {
		if clk.waits[i] != want[i] {
			t.Fatalf("waits %v, want %v", clk.waits, want)
		}
	}
	if len(rep.Findings) != 1 || rep.Findings[0].ID != plan.ReconcileStuck || rep.Findings[0].Object != "vg0/vpool" {
		t.Fatalf("findings %+v", rep.Findings)
	}
	if !strings.Contains(res.Detail, "vdo.compression@vg0/vpool (observed off)") {
		t.Fatalf("detail %q does not say what is still wrong", res.Detail)
	}
	// Same desired and observed state: not tried again, still reported.
	r.ran = nil
	for pass := 0; pass < 5; pass++ {
		clk.advance(time.Hour)
		rep, _ = e.Apply(ctx, []plan.Action{a}, h.findings())
		if rep.Results[0].Status != Stuck || len(rep.Findings) != 1 {
			t.Fatalf("pass %d: %+v", pass, rep)
		}
	}
	if len(r.ran) != 0 {
		t.Fatalf("a stuck action ran commands: %q", r.ran)
	}
	// The observed value changes: the fingerprint changes and it is retried.
	h.present[vdoFinding("").Key()] = vdoFinding("off (read-only)")
	h.fixAfter = h.applied[a.ID] + 1
	rep, _ = e.Apply(ctx, []plan.Action{a}, h.findings())
	if rep.Results[0].Status != Converged || len(rep.Findings) != 0 {
		t.Fatalf("after observed change: %+v", rep)
	}
}

func TestStuckClearedWhenNoLongerPlanned(t *testing.T) {
	e, r, h, _ := setup(0, Options{MaxAttempts: 1}, Mode{})
	ctx := context.Background()
	a := compressionAction()
	if rep, _ := e.Apply(ctx, []plan.Action{a}, h.findings()); rep.Results[0].Status != Stuck {
		t.Fatalf("%+v", rep)
	}
	if rep, _ := e.Apply(ctx, nil, nil); len(rep.Findings) != 0 {
		t.Fatalf("stuck finding kept for an action not planned: %+v", rep)
	}
	// Planned again with the same state: a fresh start, so it runs.
	r.ran = nil
	e.Apply(ctx, []plan.Action{a}, h.findings())
	if len(r.mutating()) != 1 {
		t.Fatalf("ran %q", r.ran)
	}
}

func TestRateLimit(t *testing.T) {
	e, _, _, clk := setup(1, Options{Limit: 2, Burst: 3}, Mode{})
	var acts []plan.Action
	for i := 0; i < 7; i++ {
		acts = append(acts, plan.Action{ID: "x" + strconv.Itoa(i), Kind: plan.KindCommand, Object: "vg0/lv" + strconv.Itoa(i),
			Commands: [][]string{{"lvchange", "-Zy", "vg0/lv" + strconv.Itoa(i)}}})
	}
	start := clk.Now()
	rep, _ := e.Apply(context.Background(), acts, nil)
	if rep.Count(Converged) != 7 {
		t.Fatalf("%+v", rep)
	}
	// 3 at once from the burst, then 4 more at 2 per second: 2 s.
	if got := clk.Now().Sub(start); got != 2*time.Second {
		t.Fatalf("7 actions with limit 2/s burst 3 took %v of clock, want 2s", got)
	}
}

func TestDestructiveRunsAtMostOnce(t *testing.T) {
	e, r, _, _ := setup(0, Options{}, Mode{})
	wipes := 0
	e.Wipe = func(context.Context, plan.WipeSpec) error { wipes++; return errors.New("device busy") }
	a := plan.Action{ID: "lv.absent:vg0/old", Kind: plan.KindWipe, Class: plan.Destructive, Object: "vg0/old",
		Wipe: &plan.WipeSpec{VG: "vg0", LV: "old", Mode: "zeroout", StepMax: 32 << 20}}
	ctx := context.Background()
	rep, _ := e.Apply(ctx, []plan.Action{a}, nil)
	if rep.Results[0].Attempts != 1 || wipes != 1 {
		t.Fatalf("destructive action retried: %+v, wipes %d", rep.Results[0], wipes)
	}
	// Even with a changed observed state (new fingerprint), never again.
	for i := 0; i < 3; i++ {
		rep, _ = e.Apply(ctx, []plan.Action{a}, []plan.Finding{{ID: "x", Object: "y", Observed: strconv.Itoa(i)}})
	}
	if wipes != 1 || len(r.ran) != 0 {
		t.Fatalf("wipes %d, commands %q", wipes, r.ran)
	}
}

func TestFlappingActionGetsStuck(t *testing.T) {
	e, r, h, clk := setup(1, Options{FlapCount: 4, FlapWindow: time.Hour}, Mode{})
	ctx := context.Background()
	a := compressionAction()
	var last Result
	for i := 0; i < 6; i++ {
		// Something undoes the change before every pass.
		f := vdoFinding("off")
		h.present[f.Key()] = f
		rep, _ := e.Apply(ctx, []plan.Action{a}, h.findings())
		last = rep.Results[0]
		clk.advance(time.Minute)
	}
	if last.Status != Stuck || !strings.Contains(last.Detail, "keeps undoing") {
		t.Fatalf("last %+v", last)
	}
	if n := len(r.mutating()); n != 3 {
		t.Fatalf("applied %d times, want 3 before the flap stop", n)
	}
}

// A desired state that changes a value again and again (a configuration
// tool's writes; e2e/underfire writes a bcache tunable 100 times in
// seconds) is not the host undoing the action: each new value is applied,
// however many came before it within FlapWindow. The same value applied
// again and again still is flapping (TestFlappingActionGetsStuck).
func TestChangingDesiredValueIsNotFlapping(t *testing.T) {
	e, r, h, clk := setup(1, Options{FlapCount: 4, FlapWindow: time.Hour}, Mode{})
	ctx := context.Background()
	for i := 0; i < 8; i++ {
		a := compressionAction()
		a.Commands = [][]string{{"lvchange", "--vdosettings", fmt.Sprintf("vdo_block_map_period=%d", 100+i), "vg0/vpool"}}
		f := vdoFinding("off")
		h.present[f.Key()] = f
		rep, _ := e.Apply(ctx, []plan.Action{a}, h.findings())
		if got := rep.Results[0]; got.Status != Converged {
			t.Fatalf("value %d: %+v, want converged", 100+i, got)
		}
		clk.advance(time.Minute)
	}
	if n := len(r.mutating()); n != 8 {
		t.Fatalf("applied %d times, want 8 (one per value)", n)
	}
}

func TestDryRunAndClasses(t *testing.T) {
	e, r, h, _ := setup(1, Options{}, Mode{DryRun: true})
	acts := []plan.Action{
		compressionAction(),
		{ID: "vdo.threads:vg0/vpool", Kind: plan.KindCommand, Class: plan.Maintenance, Object: "vg0/vpool",
			Commands: [][]string{{"lvchange", "--vdosettings", "vdo_cpu_threads=2", "vg0/vpool"}}},
		{ID: "thin.chunk:vg0/tp", Kind: plan.KindNone, Class: plan.Immutable, Object: "vg0/tp"},
	}
	rep, _ := e.Apply(context.Background(), acts, h.findings())
	want := []Status{Planned, Skipped, Skipped}
	for i, w := range want {
		if rep.Results[i].Status != w {
			t.Fatalf("result %d: %+v, want %s", i, rep.Results[i], w)
		}
	}
	if len(r.mutating()) != 0 {
		t.Fatalf("dry run ran %q", r.mutating())
	}
}

func TestRefusesUnknownProgram(t *testing.T) {
	e, r, _, _ := setup(1, Options{}, Mode{})
	a := plan.Action{ID: "evil", Kind: plan.KindCommand, Object: "x", Commands: [][]string{{"sh", "-c", "rm -rf /"}}}
	rep, _ := e.Apply(context.Background(), []plan.Action{a}, nil)
	if rep.Results[0].Status != Refused || len(r.ran) != 0 || rep.Findings[0].ID != plan.ReconcileRefused {
		t.Fatalf("%+v ran %q", rep, r.ran)
	}
}

func createAction(dev string) plan.Action {
	return plan.Action{ID: "vg.create:vg0", Kind: plan.KindCommand, Object: "vg0",
		Commands: [][]string{{"pvcreate", dev}, {"vgcreate", "vg0", dev}}}
}

func TestCreateRefusesSignature(t *testing.T) {
	for _, tc := range []struct {
		capture string
		status  Status
		detail  string
	}{
		{"blkid-blank", Converged, ""},
		{"blkid-ext4", Refused, "carries a ext4 signature"},
		{"blkid-pv", Refused, "carries a LVM2_member signature"},
	} {
		t.Run(tc.capture, func(t *testing.T) {
			e, r, _, _ := setup(1, Options{}, Mode{})
			dev := "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0"
			r.answers["blkid -p -o export "+dev] = captured(t, tc.capture)
			rep, _ := e.Apply(context.Background(), []plan.Action{createAction(dev)}, nil)
			res := rep.Results[0]
			if res.Status != tc.status || !strings.Contains(res.Detail, tc.detail) {
				t.Fatalf("%+v", res)
			}
			if tc.status == Refused && len(r.mutating()) != 0 {
				t.Fatalf("refused create ran %q", r.mutating())
			}
		})
	}
}

// TestVGCreateOnOrphanPV: vgcreate, and vgextend of an existing VG
// (vg.extend), take an orphan PV and refuse a PV of another VG.
func TestVGCreateOnOrphanPV(t *testing.T) {
	dev := "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0"
	for _, a := range []plan.Action{
		{ID: "vg.create:vg0", Kind: plan.KindCommand, Object: "vg0", Commands: [][]string{{"vgcreate", "vg0", dev}}},
		{ID: "vg.extend:vg0", Kind: plan.KindCommand, Object: "vg0", Commands: [][]string{{"vgextend", "vg0", dev}}},
	} {
		for _, tc := range []struct {
			pvs    string
			status Status
		}{{"pvs-orphan", Converged}, {"pvs-member", Refused}} {
			e, r, _, _ := setup(1, Options{}, Mode{})
			r.answers["blkid -p -o export "+dev] = captured(t, "blkid-pv")
			r.answers["pvs --noheadings -o vg_name "+dev] = captured(t, tc.pvs)
			rep, _ := e.Apply(context.Background(), []plan.Action{a}, nil)
			if rep.Results[0].Status != tc.status {
				t.Fatalf("%s, %s: %+v", a.ID, tc.pvs, rep.Results[0])
			}
		}
	}
}

func TestMaintenance(t *testing.T) {
	a := plan.Action{ID: "vdo.threads:vgcap/vpcap", Kind: plan.KindCommand, Class: plan.Maintenance, Object: "vgcap/vpcap",
		Commands: [][]string{{"lvchange", "--vdosettings", "vdo_cpu_threads=2", "vgcap/vpcap"}}}
	lvs := "lvs --reportformat json -o lv_name,pool_lv,lv_device_open vgcap"

	e, r, _, _ := setup(1, Options{}, Mode{Maintenance: true})
	r.answers[lvs] = captured(t, "lvs-open")
	rep, _ := e.Apply(context.Background(), []plan.Action{a}, nil)
	if rep.Results[0].Status != Refused || !strings.Contains(rep.Results[0].Detail, "vgcap/vdocap is open") {
		t.Fatalf("open LV: %+v", rep.Results[0])
	}
	if len(r.mutating()) != 0 {
		t.Fatalf("ran %q", r.mutating())
	}

	e, r, _, _ = setup(1, Options{}, Mode{Maintenance: true})
	r.answers[lvs] = captured(t, "lvs-closed")
	rep, _ = e.Apply(context.Background(), []plan.Action{a}, nil)
	if rep.Results[0].Status != Converged {
		t.Fatalf("closed LV: %+v", rep.Results[0])
	}
	want := []string{"lvchange -an vgcap/vpcap", "lvchange --vdosettings vdo_cpu_threads=2 vgcap/vpcap", "lvchange -ay vgcap/vpcap"}
	if got := r.mutating(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("ran %q, want %q", got, want)
	}

	// A failed change still reactivates the pool.
	e, r, _, _ = setup(1, Options{MaxAttempts: 1}, Mode{Maintenance: true})
	r.answers[lvs] = captured(t, "lvs-closed")
	r.answers["lvchange --vdosettings vdo_cpu_threads=2 vgcap/vpcap"] = hostio.Result{ExitCode: 5}
	rep, _ = e.Apply(context.Background(), []plan.Action{a}, nil)
	if got := r.mutating(); got[len(got)-1] != "lvchange -ay vgcap/vpcap" || rep.Results[0].Status != Stuck {
		t.Fatalf("ran %q, result %+v", got, rep.Results[0])
	}
}

func TestFingerprint(t *testing.T) {
	a := compressionAction()
	f1 := []plan.Finding{vdoFinding("off")}
	if Fingerprint(a, f1) != Fingerprint(a, []plan.Finding{vdoFinding("off"), {ID: "other", Object: "z", Observed: "1"}}) {
		t.Error("unrelated finding changed the fingerprint")
	}
	if Fingerprint(a, f1) == Fingerprint(a, []plan.Finding{vdoFinding("on?")}) {
		t.Error("observed value did not change the fingerprint")
	}
	b := a
	b.Commands = [][]string{{"lvchange", "--compression", "n", "vg0/vpool"}}
	if Fingerprint(a, f1) == Fingerprint(b, f1) {
		t.Error("desired change did not change the fingerprint")
	}
}

// The planner's own framing (go through a VG stacked on the VDO LV): the
// VDO LV is open because the upper VG is active, so the guard looks at the
// upper VG's LVs instead, and a failed change brings both back.
func TestMaintenanceStacked(t *testing.T) {
	a := plan.Action{ID: "vdo.vdosettings:vgcap/vpcap", Kind: plan.KindCommand, Class: plan.Maintenance, Object: "vgcap/vpcap",
		Commands: [][]string{
			{"vgchange", "-an", "vgup"},
			{"lvchange", "-an", "vgcap/vdocap"},
			{"lvchange", "--vdosettings", "max_discard=4096", "vgcap/vpcap"},
			{"lvchange", "-ay", "vgcap/vdocap"},
			{"vgchange", "-ay", "vgup"},
		}}
	e, r, _, _ := setup(1, Options{MaxAttempts: 1}, Mode{Maintenance: true})
	// vgup answers like a VG whose LVs are closed; vgcap (never asked) would say open.
	r.answers["lvs --reportformat json -o lv_name,pool_lv,lv_device_open vgup"] = captured(t, "lvs-closed")
	r.answers["lvs --reportformat json -o lv_name,pool_lv,lv_device_open vgcap"] = captured(t, "lvs-open")
	r.answers["lvchange --vdosettings max_discard=4096 vgcap/vpcap"] = hostio.Result{ExitCode: 5}
	rep, _ := e.Apply(context.Background(), []plan.Action{a}, nil)
	want := "vgchange -an vgup|lvchange -an vgcap/vdocap|lvchange --vdosettings max_discard=4096 vgcap/vpcap|lvchange -ay vgcap/vdocap|vgchange -ay vgup"
	if got := strings.Join(r.mutating(), "|"); got != want || rep.Results[0].Status != Stuck {
		t.Fatalf("ran %q, result %+v", got, rep.Results[0])
	}
	// An open LV in the upper VG stops it before anything runs.
	e, r, _, _ = setup(1, Options{}, Mode{Maintenance: true})
	r.answers["lvs --reportformat json -o lv_name,pool_lv,lv_device_open vgup"] = captured(t, "lvs-open")
	rep, _ = e.Apply(context.Background(), []plan.Action{a}, nil)
	if rep.Results[0].Status != Refused || len(r.mutating()) != 0 || !strings.Contains(rep.Results[0].Detail, "vgup/vdocap is open") {
		t.Fatalf("%+v, ran %q", rep.Results[0], r.mutating())
	}
}

func TestApplySubsetKeepsStuckState(t *testing.T) {
	e, r, h, _ := setup(0, Options{MaxAttempts: 1}, Mode{})
	ctx := context.Background()
	a := compressionAction()
	e.Apply(ctx, []plan.Action{a}, h.findings())
	// A partial pass that did not plan the VDO action must not forget it.
	if rep, _ := e.Executor.Apply(ctx, nil, nil, Mode{Partial: true}, e.verify); len(rep.Results) != 0 {
		t.Fatalf("%+v", rep)
	}
	r.ran = nil
	if rep, _ := e.Apply(ctx, []plan.Action{a}, h.findings()); rep.Results[0].Status != Stuck || len(r.ran) != 0 {
		t.Fatalf("stuck state lost: %+v, ran %q", rep.Results[0], r.ran)
	}
}
