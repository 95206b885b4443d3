package probes

import (
	"context"
	"testing"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/internal/lvmjson"
)

// BenchmarkProbeReplay measures the CPU cost of one probe pass with the I/O
// taken out: the replay of the mixed guest snapshot (split VDO pool, thin
// pool, bcache) through every parser and the model build.
func BenchmarkProbeReplay(b *testing.B) {
	src := hostio.Replay(loadSnapshot(b, "mixed"))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Probe(context.Background(), src); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseFullReport measures parsing the mixed stack's lvm fullreport JSON.
func BenchmarkParseFullReport(b *testing.B) {
	raw := recorded(b, "mixed", fullReportCmd.String())
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseFullReport(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseFullReportScale measures parsing the lvm fullreport JSON
// of the captured 2,000-thin-LV host (testdata/scale/scale-thin), as keel
// asks for it now: the capture's 7.7 MB report (lv_all, seg_all) cut by
// ParseSnapshot to 2.5 MB, 2,004 LV rows of 23 fields and as many segment
// rows of 31.
func BenchmarkParseFullReportScale(b *testing.B) {
	s := scaleSnapshot(b, "scale-thin")
	raw := s.Commands[fullReportCmd.String()].Result.Stdout
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseFullReport(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuildObjectsScale measures building the PVs, VGs and LVs from
// the decoded report of the captured 2,000-thin-LV host (parseReport): in
// keel check it runs after lvm fullreport exits, while the decoding runs
// as LVM writes (stream.go), so it is most of the check's time after the
// report.
func BenchmarkBuildObjectsScale(b *testing.B) {
	s := scaleSnapshot(b, "scale-thin")
	rep, err := lvmjson.DecodeRows(s.Commands[fullReportCmd.String()].Result.Stdout, parsedSubreport, false)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseReport(rep); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshotRoundTrip measures writing and parsing the mixed snapshot.
func BenchmarkSnapshotRoundTrip(b *testing.B) {
	s := loadSnapshot(b, "mixed")
	b.ReportAllocs()
	for b.Loop() {
		text, err := s.MarshalText()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := hostio.ParseSnapshot(text); err != nil {
			b.Fatal(err)
		}
	}
}
