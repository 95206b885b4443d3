package removal

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/state"
)

// testHost is a host with a VG on a disk, a thin pool in it, a VDO LV that
// is the PV of a stacked VG, and a few LVs in each. The PVs on LVs are dm
// devices (Queues gives their dm names); each linear LV lies on its VG's PV;
// no pool's space is known.
func testHost() *model.Host {
	lv := func(vg, name, seg string, mod func(*model.LV)) *model.LV {
		l := &model.LV{VG: vg, Name: name, FullName: vg + "/" + name, SegType: seg, Active: true, Size: 1 << 30,
			DMName: strings.ReplaceAll(vg, "-", "--") + "-" + strings.ReplaceAll(name, "-", "--"), DataPercent: -1,
			UUID: "uuid-" + vg + "-" + name}
		l.Fields.Set("lv_time", "2026-11-29 23:05:20 +0000")
		// A linear LV lies on its VG's one PV.
		if pv := map[string]string{"vdolab": "/dev/vdb", "vms": "/dev/vdolab/vdolv"}[vg]; seg == "linear" && pv != "" {
			l.Segments = []model.Segment{{Type: seg, Devices: []model.SegmentDev{{Name: pv, IsPV: true}}}}
		}
		if mod != nil {
			mod(l)
		}
		return l
	}
	lvs := []*model.LV{
		lv("vdolab", "vpool", "vdo-pool", nil),
		lv("vdolab", "vpool_vdata", "linear", func(l *model.LV) { l.Hidden = true }),
		lv("vdolab", "vdolv", "vdo", func(l *model.LV) { l.Open = true }),
		lv("vdolab", "tpool", "thin-pool", nil),
		lv("vdolab", "thin-1", "thin", nil),
		lv("vdolab", "plain", "linear", nil),
		lv("vdolab", "busy", "linear", func(l *model.LV) { l.Open = true }),
		lv("vdolab", "del-old", "linear", func(l *model.LV) { l.Fields.Set("lv_tags", Tag) }),
		lv("vdolab", "del-foreign", "linear", nil),
		lv("vdolab", "pvlv", "linear", func(l *model.LV) { l.Open = true }),
		lv("vms", "vm-100-disk-0", "linear", nil),
		lv("vms", "vm-101-disk-0", "linear", func(l *model.LV) { l.Active = false }),
		lv("vms", "del-vm-102-disk-0", "linear", nil),
		lv("other", "data", "linear", nil),
	}
	h := &model.Host{LVs: map[string]*model.LV{}, PVs: map[string]*model.PV{
		"/dev/vdb":          {Name: "/dev/vdb", VG: "vdolab", Device: "vdb"},
		"/dev/vdolab/vdolv": {Name: "/dev/vdolab/vdolv", VG: "vms", Device: "dm-3"},
		"/dev/vdolab/pvlv":  {Name: "/dev/vdolab/pvlv", VG: "", Device: "dm-9"},
	}, Queues: map[string]*model.Queue{
		"vdb":  {Device: "vdb"},
		"dm-3": {Device: "dm-3", DMName: "vdolab-vdolv"},
		"dm-9": {Device: "dm-9", DMName: "vdolab-pvlv"},
	}}
	for _, l := range lvs {
		h.LVs[l.VG+"/"+l.Name] = l
	}
	return h
}

// seen is keel's record of every absent name of decl, first seen now (after
// every LV of the test hosts was made), as a pass records it before it
// plans.
func seen(decl Declared) map[string]state.Absent {
	st := state.New()
	st.See(AbsentNames(decl), time.Now())
	return st.Absent
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
			targets, err := Plan(testHost(), testConfig(), Request{Names: []string{"vdolab/plain", tc.name}, RequireAbsent: tc.absent, Known: seen(testConfig())})
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
	targets, err := Plan(testHost(), testConfig(), Request{
		Names: []string{"vms/vm-101-disk-0", "vdolab/thin-1", "vdolab/plain", "vms/vm-100-disk-0"},
		Mode:  ModeDiscard, Known: seen(testConfig()),
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

	targets, err = Plan(testHost(), testConfig(), Request{Names: []string{"vms/vm-100-disk-0"}})
	if err != nil {
		t.Fatal(err)
	}
	last := targets[len(targets)-1]
	if last.Mode != ModeZeroOut || !last.DiscardAfter || !strings.Contains(last.Notes[0], "is only on VDO") {
		t.Errorf("zeroout on a VG stacked on VDO: %+v", last)
	}
}

func TestPlanAbsentListIsIdempotent(t *testing.T) {
	cfg := testConfig()
	names := AbsentNames(cfg)
	if want := []string{"vdolab/plain", "vms/gone", "vms/vm-100-disk-0", "vms/vm-102-disk-0"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("AbsentNames = %v, want %v", names, want)
	}
	targets, err := Plan(testHost(), cfg, Request{Names: names, RequireAbsent: true, Known: seen(cfg)})
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
	if _, err := Plan(testHost(), testConfig(), Request{Mode: "shred"}); !errors.Is(err, ErrRefused) {
		t.Fatalf("got %v", err)
	}
}
