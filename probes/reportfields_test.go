package probes

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
)

// legacyReportKey is the key of the LVM report in the snapshots captured
// before fullReportCmd named its fields: every capture in testdata.
var legacyReportKey = func() string {
	c, ok := legacyReportCmd(fullReportCmd)
	if !ok {
		panic("probes: fullReportCmd has no legacy form")
	}
	return c.String()
}()

// TestNarrowReportSameHost replays every guest capture twice: as recorded
// (lv_all and seg_all, through legacyReportCmd) and as ParseSnapshot gives
// it, with its report cut to the fields fullReportCmd names, under
// fullReportCmd's own key (narrowLegacyReport). The hosts must be the same but for the LV and segment fields that were not
// asked for (and vdo_saving_percent among a VDO pool's settings): no field
// the probe builds its model from is missing from the list, and every
// name on the list is one the guest's LVM printed.
func TestNarrowReportSameHost(t *testing.T) {
	paths, err := filepath.Glob("testdata/snapshots/*.txtar")
	if err != nil || len(paths) < 10 {
		t.Fatalf("captures: %v %v", paths, err)
	}
	asked := map[string]bool{}
	for _, f := range append(slices.Clone(reportLVFields), reportSegFields...) {
		asked[f] = true
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".txtar")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			snap, err := hostio.ParseSnapshotRaw(raw)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := snap.Commands[legacyReportKey]; !ok {
				t.Fatal("no lvm fullreport recorded with lv_all")
			}
			want, werr := Probe(context.Background(), hostio.Replay(snap))

			// What tests and replays read: ParseSnapshot narrows it.
			cut := loadSnapshot(t, name)
			if _, ok := cut.Commands[legacyReportKey]; ok {
				t.Fatal("the loaded snapshot still holds the report asked with lv_all")
			}
			if _, ok := cut.Commands[fullReportCmd.String()]; !ok {
				t.Fatal("the loaded snapshot has no report under fullReportCmd")
			}
			got, gerr := Probe(context.Background(), hostio.Replay(cut))
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("errors differ: recorded %v, narrowed %v", werr, gerr)
			}
			for _, lv := range want.LVs {
				lv.Fields = only(lv.Fields, asked)
				for i := range lv.Segments {
					lv.Segments[i].Fields = only(lv.Segments[i].Fields, asked)
				}
			}
			for _, p := range want.VDOPools {
				delete(p.Settings, "vdo_saving_percent")
			}
			wj, _ := json.MarshalIndent(want, "", " ")
			gj, _ := json.MarshalIndent(got, "", " ")
			if !bytes.Equal(wj, gj) {
				t.Errorf("the host from the narrowed report differs:\n%s", firstDiff(wj, gj))
			}
		})
	}
}

// only is f with the fields in keep alone.
func only(f model.Fields, keep map[string]bool) model.Fields {
	m := map[string]string{}
	for k, v := range f.All() {
		if keep[k] {
			m[k] = v
		}
	}
	if f.Len() == 0 {
		return f
	}
	return model.FieldsOf(m)
}

// firstDiff shows the first line where a and b differ, with its neighbours.
func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(la) && i < len(lb); i++ {
		if la[i] != lb[i] {
			lo := max(0, i-3)
			return "recorded:\n" + strings.Join(la[lo:min(len(la), i+3)], "\n") + "\nnarrowed:\n" + strings.Join(lb[lo:min(len(lb), i+3)], "\n")
		}
	}
	return "one is a prefix of the other"
}

// TestLegacyReportCmd: the report, its retry and either one limited to
// some devices are found under the argv of the snapshots recorded with
// lv_all and seg_all; any other command has no legacy form.
func TestLegacyReportCmd(t *testing.T) {
	old, ok := legacyReportCmd(fullReportCmd)
	if !ok || !slices.Contains(old.Args, "lv_all,vg_name") || !slices.Contains(old.Args, "seg_all,lv_uuid,lv_name,vg_name") {
		t.Fatalf("legacy report %v %v", ok, old.Args)
	}
	if slices.Contains(fullReportCmd.Args, "lv_all,vg_name") {
		t.Error("legacyReportCmd changed fullReportCmd")
	}
	retry := withDevices(retryCmd([]string{"lv_name", "lv_uuid", "vg_name"}, []string{"vg0"}), []string{"/dev/sda"})
	r, ok := legacyReportCmd(retry)
	if !ok || !slices.Contains(r.Args, "lv_name,lv_uuid,vg_name") || !slices.Contains(r.Args, "seg_all,lv_uuid,lv_name,vg_name") ||
		!slices.Contains(r.Args, "--devices") || r.Args[len(r.Args)-1] != "vg0" {
		t.Errorf("legacy retry %v %v: want its LV fields kept and seg_all", ok, r.Args)
	}
	for _, c := range []hostio.Cmd{dmTableCmd, lvmConfigCmd, {Name: "lvm", Args: []string{"vgs"}}, old} {
		if _, ok := legacyReportCmd(c); ok {
			t.Errorf("%v has a legacy form", c)
		}
	}
}
