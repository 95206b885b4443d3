package probes

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
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
	asked := map[string]bool{}
	for _, f := range append(slices.Clone(reportLVFields), reportSegFields...) {
		asked[f] = true
	}
	eachCapture(t, func(t *testing.T, name string, snap *hostio.Snapshot) {
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

// eachCapture runs f, in a subtest named after it, on every guest capture
// as recorded (ParseSnapshotRaw: no Migration applied).
func eachCapture(t *testing.T, f func(t *testing.T, name string, recorded *hostio.Snapshot)) {
	t.Helper()
	paths, err := filepath.Glob("testdata/snapshots/*.txtar")
	if err != nil || len(paths) < 10 {
		t.Fatalf("captures: %v %v", paths, err)
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
			f(t, name, snap)
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

// reportElements are the elements (one per VG) of a recorded fullreport.
func reportElements(t *testing.T, out []byte) []map[string][]json.RawMessage {
	t.Helper()
	var rep struct {
		Report []map[string][]json.RawMessage `json:"report"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report: %v", err)
	}
	return rep.Report
}

// TestSelectedRowsSameHost replays every guest capture twice: with the
// report keel asks for now, whose segment subreport leaves out thin
// volumes (segSelect) and whose pvseg subreport selects nothing
// (pvSegNone), and with the same report as keel asked before, every row
// kept (allRowsReportCmd). The hosts must be the same: thinSegment builds
// each thin volume's segment as LVM printed it, and no PV segment row was
// read.
func TestSelectedRowsSameHost(t *testing.T) {
	for _, sub := range []string{"seg", "pvseg"} {
		i := slices.Index(fullReportCmd.Args, sub)
		if i < 0 || i+4 >= len(fullReportCmd.Args) || fullReportCmd.Args[i+3] != "-S" {
			t.Fatalf("fullReportCmd's %s subreport selects no rows: %v", sub, fullReportCmd.Args)
		}
	}
	all, ok := allRowsReportCmd(fullReportCmd)
	if !ok || !slices.Contains(all.Args, legacyPVSegOptions) || slices.Contains(all.Args, "-S") ||
		!slices.Contains(all.Args, reportLVOptions) || !slices.Contains(all.Args, reportSegOptions) {
		t.Fatalf("the report with every row: %v %v", ok, all.Args)
	}
	thinRows, pvSegRows := 0, 0
	eachCapture(t, func(t *testing.T, name string, recorded *hostio.Snapshot) {
		legacy := recorded.Commands[legacyReportKey]
		everyRow, ok := narrowReport(legacy.Result.Stdout, false)
		if !ok {
			t.Fatal("the capture's report does not narrow")
		}
		for _, el := range reportElements(t, everyRow) {
			pvSegRows += len(el["pvseg"])
			for _, row := range el["seg"] {
				if isThinSegRow(row) {
					thinRows++
				}
			}
		}
		cut := loadSnapshot(t, name)
		rec := cut.Commands[fullReportCmd.String()]
		for _, el := range reportElements(t, rec.Result.Stdout) {
			if n := len(el["pvseg"]); n != 0 {
				t.Errorf("the loaded report holds %d PV segment rows", n)
			}
			for _, row := range el["seg"] {
				if isThinSegRow(row) {
					t.Errorf("the loaded report holds a thin volume's segment: %s", row)
				}
			}
		}
		want, werr := Probe(context.Background(), hostio.Replay(cut))

		before := *cut
		before.Commands = maps.Clone(cut.Commands)
		delete(before.Commands, fullReportCmd.String())
		rec.Argv, rec.Result.Stdout = all.Argv(), everyRow
		before.Commands[all.String()] = rec
		got, gerr := Probe(context.Background(), hostio.Replay(&before))
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("errors differ: selected rows %v, every row %v", werr, gerr)
		}
		wj, _ := json.MarshalIndent(want, "", " ")
		gj, _ := json.MarshalIndent(got, "", " ")
		if !bytes.Equal(wj, gj) {
			t.Errorf("the host from every row differs:\n%s", firstDiff(gj, wj))
		}
	})
	if thinRows == 0 || pvSegRows == 0 {
		t.Errorf("the captures hold %d thin volume segment rows and %d PV segment rows: nothing was left out", thinRows, pvSegRows)
	}
}
