package probes

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
)

// scaleSnapshot reads a gzipped guest capture of probes/testdata/scale.
func scaleSnapshot(t testing.TB, name string) *Snapshot {
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
	s, err := ParseSnapshot(b.Bytes())
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
	rec, ok := snap.Commands[fullReportCmd.String()]
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
	if fullReportCmd.Args[lvOptionsIndex()] != "lv_all,vg_name" {
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
