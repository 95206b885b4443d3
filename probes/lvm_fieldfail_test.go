package probes

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/internal/lvmjson"
)

// scaleSnapshot reads a gzipped guest capture of probes/testdata/scale.
func scaleSnapshot(t testing.TB, name string) *hostio.Snapshot {
	t.Helper()
	f, err := os.Open("testdata/scale/" + name + ".txtar.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := io.Copy(&b, z); err != nil {
		t.Fatal(err)
	}
	s, err := hostio.ParseSnapshot(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFieldFailureRetry reads the report LVM gave on the guest's VDO pool
// holding more data blocks than its LVs map: exit 5, vdo_saving_percent
// failed for the pool and its VDO LV, and their rows left out. The retry
// names every LV field the other rows carry but that one; a log with any
// other error is no field failure.
func TestFieldFailureRetry(t *testing.T) {
	snap := scaleSnapshot(t, "scale-vdo")
	rec, ok := snap.Commands[legacyReportKey]
	if !ok || rec.Result.ExitCode != 5 {
		t.Fatalf("scale-vdo: want the first lvm fullreport recorded with exit 5, got %v %d", ok, rec.Result.ExitCode)
	}
	retry, vgs, note, ok := fieldFailureRetry(rec.Result.Stdout)
	if !ok {
		t.Fatal("a report whose log holds only the failed vdo_saving_percent was not retried")
	}
	if !slices.Equal(vgs, []string{"vdolab"}) || !slices.Equal(retry.Args[len(retry.Args)-2:], []string{"--", "vdolab"}) {
		t.Errorf("retry of VGs %v, argv ends %v: want only vdolab, the VG of the failed LVs (not vdovg's 2,000 LVs again)",
			vgs, retry.Args[len(retry.Args)-2:])
	}
	for _, want := range []string{"vdo_saving_percent", "vdolab/vdopool", "vdolab/vdolv", "VG vdolab"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q does not name %s", note, want)
		}
	}
	lv := strings.Split(retry.Args[lvOptionsIndex()], ",")
	if slices.Contains(lv, "vdo_saving_percent") || slices.Contains(lv, "lv_all") {
		t.Errorf("retry still asks for the failed field or the whole set: %v", lv)
	}
	for _, want := range []string{"lv_uuid", "lv_name", "lv_attr", "vg_name", "vdo_operating_mode", "vdo_used_size", "data_percent"} {
		if !slices.Contains(lv, want) {
			t.Errorf("retry drops %s: %v", want, lv)
		}
	}
	if n := len(retry.Args); n != len(fullReportCmd.Args)+2 || retry.Args[lvOptionsIndex()-2] != "lv" {
		t.Errorf("retry argv %v does not keep fullreport's other subreports", retry.Args)
	}
	if fullReportCmd.Args[lvOptionsIndex()] != strings.Join(reportLVFields, ",") {
		t.Errorf("the retry changed fullReportCmd: %v", fullReportCmd.Args)
	}

	// A log that does not name a failed LV's VG: every VG is asked again.
	nogroup := bytes.ReplaceAll(rec.Result.Stdout, []byte(`"log_object_group":"vdolab"`), []byte(`"log_object_group":""`))
	if bytes.Equal(nogroup, rec.Result.Stdout) {
		t.Fatal("the failed report's log does not name vdolab as the LVs' group")
	}
	whole, vgs, note, ok := fieldFailureRetry(nogroup)
	if !ok || vgs != nil || slices.Contains(whole.Args, "--") || len(whole.Args) != len(fullReportCmd.Args) || !strings.Contains(note, "every VG") {
		t.Errorf("no group in the log: ok %v, VGs %v, argv ends %v, note %q; want every VG asked again", ok, vgs, whole.Args[len(whole.Args)-2:], note)
	}

	other := bytes.Replace(rec.Result.Stdout, []byte("report function failed for field vdo_saving_percent"),
		[]byte("Failed to read metadata area header"), 1)
	if _, _, _, ok := fieldFailureRetry(other); ok {
		t.Error("a report whose log holds another error was taken for a field failure")
	}
	if _, _, _, ok := fieldFailureRetry([]byte("not json")); ok {
		t.Error("an unreadable report was taken for a field failure")
	}
}

// TestReportHead checks the quick reading of a failed report against the
// whole one: on the guest's capture it finds the same log and LV field
// names, and where the log is not the document's last member, or the last
// `"log"` is a value and not the key, it finds nothing and
// fieldFailureRetry reads the whole report for the same retry.
func TestReportHead(t *testing.T) {
	snap := scaleSnapshot(t, "scale-vdo")
	out := snap.Commands[legacyReportKey].Result.Stdout
	log, keys, found := lvmjson.Head(out)
	if !found {
		t.Fatal("reportHead found no log or LV row in the guest's failed report")
	}
	whole, err := lvmjson.DecodeRows(out, func(sub string) bool { return sub == "lv" }, true)
	if err != nil {
		t.Fatal(err)
	}
	var wantKeys []string
	for k := range whole.Report[0]["lv"][0].All() {
		wantKeys = append(wantKeys, k)
	}
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("LV field names %v, want the first LV row's %v", keys, wantKeys)
	}
	if len(log) != len(whole.Log) || !slices.EqualFunc(log, whole.Log, maps.Equal) {
		t.Errorf("log %v, want %v", log, whole.Log)
	}
	want, wantVGs, wantNote, _ := retryWithout(whole.Log, wantKeys)

	trimmed := bytes.TrimRight(out, " \n")
	for _, c := range []struct {
		name string
		in   []byte
	}{
		// A member after the log: it is not the document's end.
		{"log not last", append(trimmed[:len(trimmed)-1:len(trimmed)-1], []byte(`, "other": []}`)...)},
		// An LV named "log" in the log's last row: the last "log" is a value.
		{"log as a value", bytes.Replace(out, []byte(`"log_object_name":"vdolab"`), []byte(`"log_object_name":"log"`), 1)},
	} {
		if bytes.Equal(c.in, out) {
			t.Fatalf("%s: the capture was not changed", c.name)
		}
		if _, _, found := lvmjson.Head(c.in); found {
			t.Errorf("%s: reportHead took it", c.name)
		}
		retry, vgs, note, ok := fieldFailureRetry(c.in)
		if !ok || !slices.Equal(retry.Args, want.Args) || !slices.Equal(vgs, wantVGs) || (c.name == "log not last" && note != wantNote) {
			t.Errorf("%s: retry %v %v %q %v, want the whole report's %v %v %q", c.name, ok, vgs, note, retry.Args, wantVGs, want.Args, wantNote)
		}
	}
	if _, _, found := lvmjson.Head(trimmed[:len(trimmed)-1]); found {
		t.Error("a document without its closing brace was taken")
	}
}

// TestProbeRetryDecodesFailedReport replays the guest's 2,000-LV VDO host,
// whose first report exits 5: the VGs the retry does not cover come from
// the failed report, decoded while the retry runs, and a failed report
// whose rows do not decode is an error naming the report.
func TestProbeRetryDecodesFailedReport(t *testing.T) {
	snap := scaleSnapshot(t, "scale-vdo")
	h, err := Probe(context.Background(), hostio.Replay(snap))
	if err != nil {
		t.Fatal(err)
	}
	if h.VGs["vdovg"] == nil || len(h.LVs) < 2000 || h.LVs["vdolab/vdopool"] == nil {
		t.Fatalf("VGs %d, LVs %d, vdolab/vdopool %v: want vdovg's LVs from the failed report and the pool from the retry",
			len(h.VGs), len(h.LVs), h.LVs["vdolab/vdopool"] != nil)
	}
	rec := snap.Commands[legacyReportKey]
	// Break a row of vdovg, far from the log and the first LV row.
	at := bytes.Index(rec.Result.Stdout, []byte(`"lv_name":"vm-1500-disk-0"`))
	if at < 0 {
		t.Fatal("no vm-1500-disk-0 row in the capture")
	}
	broken := slices.Clone(rec.Result.Stdout)
	broken[at+len(`"lv_name":`)] = '{'
	rec.Result.Stdout = broken
	snap.Commands[legacyReportKey] = rec
	_, err = Probe(context.Background(), hostio.Replay(snap))
	if err == nil || !strings.Contains(err.Error(), "lvm fullreport: offset") {
		t.Errorf("a failed report whose rows do not decode: error %v, want the decoding error", err)
	}
}

// TestVGOfDMName reads the VG out of device-mapper names LVM made.
func TestVGOfDMName(t *testing.T) {
	for _, c := range []struct{ name, vg string }{
		{"vdolab-vdopool-vpool", "vdolab"}, {"my--vg-pool-vpool", "my-vg"}, {"a--b--c-d", "a-b-c"},
		{"novg", ""}, {"-lv", ""}, {"vg--", ""},
	} {
		if vg, ok := VGOfDMName(c.name); vg != c.vg || ok != (c.vg != "") {
			t.Errorf("VGOfDMName(%q) = %q, %v; want %q", c.name, vg, ok, c.vg)
		}
	}
}
