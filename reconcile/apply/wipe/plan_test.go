package wipe

import (
	"context"
	"errors"
	"fmt"
	"github.com/keel-storage/keel/probes/hostio"
	"os"
	"reflect"
	"strings"
	"testing"
)

// testInventory is a host with a VG on a disk, a thin pool in it, a VDO LV
// that is the PV of a stacked VG, and a few LVs in each.
func testInventory() Inventory {
	lv := func(vg, name, seg string, mod func(*LVInfo)) LVInfo {
		l := LVInfo{VG: vg, Name: name, SegType: seg, Active: true, Size: 1 << 30,
			DMName: strings.ReplaceAll(vg, "-", "--") + "-" + strings.ReplaceAll(name, "-", "--")}
		if mod != nil {
			mod(&l)
		}
		return l
	}
	lvs := []LVInfo{
		lv("vdolab", "vpool", "vdo-pool", nil),
		lv("vdolab", "vpool_vdata", "linear", func(l *LVInfo) { l.Hidden = true }),
		lv("vdolab", "vdolv", "vdo", func(l *LVInfo) { l.Open = true }),
		lv("vdolab", "tpool", "thin-pool", nil),
		lv("vdolab", "thin-1", "thin", nil),
		lv("vdolab", "plain", "linear", nil),
		lv("vdolab", "busy", "linear", func(l *LVInfo) { l.Open = true }),
		lv("vdolab", "del-old", "linear", func(l *LVInfo) { l.Tags = []string{Tag} }),
		lv("vdolab", "del-foreign", "linear", nil),
		lv("vdolab", "pvlv", "linear", func(l *LVInfo) { l.Open = true }),
		lv("vms", "vm-100-disk-0", "linear", nil),
		lv("vms", "vm-101-disk-0", "linear", func(l *LVInfo) { l.Active = false }),
		lv("vms", "del-vm-102-disk-0", "linear", nil),
		lv("other", "data", "linear", nil),
	}
	inv := Inventory{LVs: map[string]LVInfo{}, PVs: map[string]PVInfo{
		"/dev/vdb":          {Name: "/dev/vdb", VG: "vdolab"},
		"/dev/vdolab/vdolv": {Name: "/dev/vdolab/vdolv", VG: "vms", DMName: "vdolab-vdolv"},
		"/dev/vdolab/pvlv":  {Name: "/dev/vdolab/pvlv", VG: "", DMName: "vdolab-pvlv"},
	}}
	for _, l := range lvs {
		inv.LVs[l.VG+"/"+l.Name] = l
	}
	return inv
}

func testConfig() Declared {
	return Declared{
		"vdolab": {"plain"},
		"vms":    {"vm-100-disk-0", "vm-102-disk-0", "gone"},
	}
}

func TestPlanRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		absent     bool
	}{
		{"other/data", "vg other is not declared", false},
		{"vdolab/thin-1", "not in the absent list of vg vdolab", true},
		{"vdolab/busy", "is open", false},
		{"vdolab/pvlv", "is a PV", false},
		{"/dev/vdb", "is a PV (of vg \"vdolab\")", false},
		{"/dev/sdz", "not devices", false},
		{"vdolab/tpool", "is a thin pool", false},
		{"vdolab/vpool", "is a VDO pool", false},
		{"vdolab/vdolv", "is a VDO LV", false},
		{"vdolab/vpool_vdata", "hidden sub-LV", false},
		{"vdolab/-rf", "not a valid VG/LV name", false},
		{"vdolab", "not a valid VG/LV name", false},
		{"vdolab/a b", "not a valid VG/LV name", false},
		{"vdolab/del-foreign", "not left by keel", false},
		{"vdolab/nosuch", "no such LV", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			targets, err := Plan(testInventory(), testConfig(), Request{Names: []string{"vdolab/plain", tc.name}, RequireAbsent: tc.absent})
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want refusal containing %q", err, tc.want)
			}
			if targets != nil {
				t.Fatalf("a refusal still planned %v", targets)
			}
		})
	}
}

func TestPlanResumesFirstAndPicksModes(t *testing.T) {
	targets, err := Plan(testInventory(), testConfig(), Request{
		Names: []string{"vms/vm-101-disk-0", "vdolab/thin-1", "vdolab/plain", "vms/vm-100-disk-0"},
		Mode:  ModeDiscard,
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tg := range targets {
		got = append(got, fmt.Sprintf("%s resume=%v active=%v mode=%s after=%v notes=%d", tg.Name(), tg.Resume, tg.Active, tg.Mode, tg.DiscardAfter, len(tg.Notes)))
	}
	want := []string{
		// del-old carries keel's tag; del-vm-102-disk-0 has no tag but its
		// original name is absent; del-foreign has neither and is left alone.
		"vdolab/old resume=true active=true mode=zeroout after=false notes=1",
		"vms/vm-102-disk-0 resume=true active=true mode=discard after=false notes=0",
		"vms/vm-101-disk-0 resume=false active=false mode=discard after=false notes=0",
		"vdolab/thin-1 resume=false active=true mode=discard after=false notes=0",
		"vdolab/plain resume=false active=true mode=zeroout after=false notes=1",
		"vms/vm-100-disk-0 resume=false active=true mode=discard after=false notes=0",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(targets[0].Notes[0], "zeroing instead") {
		t.Errorf("linear del-old in discard mode: note %q", targets[0].Notes[0])
	}

	targets, err = Plan(testInventory(), testConfig(), Request{Names: []string{"vms/vm-100-disk-0"}})
	if err != nil {
		t.Fatal(err)
	}
	last := targets[len(targets)-1]
	if last.Mode != ModeZeroOut || !last.DiscardAfter || !strings.Contains(last.Notes[0], "stacked on VDO") {
		t.Errorf("zeroout on a VG stacked on VDO: %+v", last)
	}
}

func TestPlanAbsentListIsIdempotent(t *testing.T) {
	cfg := testConfig()
	names := AbsentNames(cfg)
	if want := []string{"vdolab/plain", "vms/gone", "vms/vm-100-disk-0", "vms/vm-102-disk-0"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("AbsentNames = %v, want %v", names, want)
	}
	targets, err := Plan(testInventory(), cfg, Request{Names: names, RequireAbsent: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tg := range targets {
		got = append(got, tg.Name())
	}
	// vms/gone does not exist: nothing to do. vm-102 is resumed once only.
	if want := []string{"vdolab/old", "vms/vm-102-disk-0", "vdolab/plain", "vms/vm-100-disk-0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("targets %v, want %v", got, want)
	}
}

func TestPlanBadMode(t *testing.T) {
	if _, err := Plan(testInventory(), testConfig(), Request{Mode: "shred"}); !errors.Is(err, ErrRefused) {
		t.Fatalf("got %v", err)
	}
}

func TestDMPath(t *testing.T) {
	if got := DMPath("vg-a", "del-vm-1"); got != "/dev/mapper/vg--a-del--vm--1" {
		t.Fatal(got)
	}
}

// fakeExec records commands and fails the ones listed in fail.
type fakeExec struct {
	argvs []string
	fail  map[string]error
}

func (f *fakeExec) Run(_ context.Context, c hostio.Cmd) (hostio.Result, error) {
	f.argvs = append(f.argvs, c.String())
	return hostio.Result{}, f.fail[c.Name]
}

// testRemover wipes regular files standing in for the LVs' device nodes.
func testRemover(t *testing.T, ex *fakeExec, devs map[string]*fileDevice) *Remover {
	return &Remover{
		Exec: ex,
		Step: 1 << 20,
		Path: func(vg, lv string) string { return vg + "/" + lv },
		Open: func(path string) (DeviceCloser, error) {
			d, ok := devs[path]
			if !ok {
				return nil, fmt.Errorf("device %s: %w", path, os.ErrNotExist)
			}
			return nopCloser{d}, nil
		},
		Limits: func(path string) (QueueLimits, error) {
			return QueueLimits{Dev: "dm-9", WriteZeroesMax: 8 << 20, DiscardMax: 8 << 20}, nil
		},
		OpenCount: func(string) (int, error) { return 1, nil }, // keel's own open only
	}
}

type nopCloser struct{ Device }

func (nopCloser) Close() error { return nil }

func TestRemoverRenamesWipesRemoves(t *testing.T) {
	del := newFileDevice(t, 3<<20, true)
	ex := &fakeExec{}
	r := testRemover(t, ex, map[string]*fileDevice{"vms/vm-100-disk-0": del, "vms/del-vm-100-disk-0": del})
	var started, finished []Mode
	r.Started = func(_ Target, m Mode, _ *Progress) { started = append(started, m) }
	r.Finished = func(_ Target, m Mode, p *Progress, err error) {
		if err != nil || !p.Done() {
			t.Errorf("pass %s: err %v done %v", m, err, p.Done())
		}
		finished = append(finished, m)
	}
	tg := Target{VG: "vms", LV: "vm-100-disk-0", Active: true, Mode: ModeZeroOut, DiscardAfter: true}
	if err := r.Check([]Target{tg}); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(context.Background(), []Target{tg}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"lvchange --addtag keel_wipe vms/vm-100-disk-0",
		"lvrename vms vm-100-disk-0 del-vm-100-disk-0",
		"lvremove --yes vms/del-vm-100-disk-0",
	}
	if !reflect.DeepEqual(ex.argvs, want) {
		t.Fatalf("commands:\n%s", strings.Join(ex.argvs, "\n"))
	}
	if !reflect.DeepEqual(started, []Mode{ModeZeroOut, ModeDiscard}) || len(finished) != 2 {
		t.Fatalf("passes started %v finished %v", started, finished)
	}
	allZero(t, del.f)
}

func TestRemoverResumeInactive(t *testing.T) {
	del := newFileDevice(t, 2<<20, true)
	ex := &fakeExec{}
	r := testRemover(t, ex, map[string]*fileDevice{"vms/del-vm-102-disk-0": del})
	tg := Target{VG: "vms", LV: "vm-102-disk-0", Resume: true, Mode: ModeDiscard}
	if err := r.Check([]Target{tg}); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(context.Background(), []Target{tg}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"lvchange --activate y --ignoreactivationskip vms/del-vm-102-disk-0",
		"lvremove --yes vms/del-vm-102-disk-0",
	}
	if !reflect.DeepEqual(ex.argvs, want) {
		t.Fatalf("commands:\n%s", strings.Join(ex.argvs, "\n"))
	}
	allZero(t, del.f)
}

func TestRemoverCheckRefusesBusyDevice(t *testing.T) {
	ex := &fakeExec{}
	r := testRemover(t, ex, nil)
	r.Open = func(path string) (DeviceCloser, error) {
		return nil, fmt.Errorf("device %s: exclusive open: %w", path, errors.New("device or resource busy"))
	}
	err := r.Check([]Target{{VG: "vms", LV: "vm-100-disk-0", Active: true, Mode: ModeZeroOut}})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("got %v", err)
	}
	if len(ex.argvs) != 0 {
		t.Fatalf("check ran %v", ex.argvs)
	}
}

func TestRemoverInterruptedWipeKeepsDelLV(t *testing.T) {
	del := newFileDevice(t, 8<<20, true)
	ex := &fakeExec{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := testRemover(t, ex, nil)
	r.Open = func(string) (DeviceCloser, error) {
		return nopCloser{&cancelDevice{fileDevice: del, after: 3, cancel: cancel}}, nil
	}
	tg := Target{VG: "vms", LV: "vm-100-disk-0", Active: true, Mode: ModeZeroOut}
	err := r.Remove(ctx, []Target{tg})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "now vms/del-vm-100-disk-0; keel wipe vms/vm-100-disk-0 resumes it") {
		t.Fatalf("got %v", err)
	}
	for _, a := range ex.argvs {
		if strings.HasPrefix(a, "lvremove") {
			t.Fatalf("lvremove ran after an interrupted wipe: %v", ex.argvs)
		}
	}
}

func TestRemoverStopsOnCommandFailure(t *testing.T) {
	ex := &fakeExec{fail: map[string]error{"lvrename": errors.New("exit status 5")}}
	r := testRemover(t, ex, nil)
	err := r.Remove(context.Background(), []Target{{VG: "vms", LV: "a", Active: true, Mode: ModeZeroOut}, {VG: "vms", LV: "b", Active: true, Mode: ModeZeroOut}})
	if err == nil || !strings.Contains(err.Error(), "lv vms/a") {
		t.Fatalf("got %v", err)
	}
	if len(ex.argvs) != 2 {
		t.Fatalf("went on after a failure: %v", ex.argvs)
	}
}

func TestRemoverFallsBackWhenDiscardUnsupported(t *testing.T) {
	for _, tc := range []struct {
		tg   Target
		want []Mode
	}{
		{Target{VG: "vms", LV: "a", Active: true, Mode: ModeDiscard}, []Mode{ModeZeroOut}},
		{Target{VG: "vms", LV: "a", Active: true, Mode: ModeZeroOut, DiscardAfter: true}, []Mode{ModeZeroOut}},
	} {
		del := newFileDevice(t, 2<<20, true)
		ex := &fakeExec{}
		r := testRemover(t, ex, map[string]*fileDevice{"vms/del-a": del})
		r.Limits = func(string) (QueueLimits, error) { return QueueLimits{Dev: "dm-7"}, nil }
		var passes []Mode
		r.Started = func(_ Target, m Mode, _ *Progress) { passes = append(passes, m) }
		if err := r.Remove(context.Background(), []Target{tc.tg}); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(passes, tc.want) {
			t.Errorf("%+v: passes %v, want %v", tc.tg, passes, tc.want)
		}
		allZero(t, del.f)
		if last := ex.argvs[len(ex.argvs)-1]; last != "lvremove --yes vms/del-a" {
			t.Errorf("last command %q", last)
		}
	}
}

// TestValidName checks the name rule against LVM's: the characters, the
// leading '-', the length limit and the two reserved names.
func TestValidName(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"vm-100-disk-0", true},
		{"del-vm-100-disk-0", true},
		{"a", true},
		{"_x+y.z", true},
		{".hidden", true},
		{"...", true},
		{"", false},
		{"-rf", false},
		{".", false},
		{"..", false},
		{"a b", false},
		{"a/b", false},
		{"a;b", false},
		{"über", false},
		{"a\x00b", false},
		{strings.Repeat("x", 127), true},
		{strings.Repeat("x", 128), false},
	} {
		if got := ValidName(c.name); got != c.ok {
			t.Errorf("ValidName(%q) = %v, want %v", c.name, got, c.ok)
		}
	}
}
