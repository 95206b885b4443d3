package probes

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/internal/lvmjson"
	"github.com/keel-storage/keel/probes/model"
)

// reportInputs returns every lvm fullreport output the repository holds
// (the guest captures of probes and reconcile, the scale captures, the
// fuzz corpus) by a name, plus the whole outputs cut and spoiled.
func reportInputs(t *testing.T) map[string][]byte {
	t.Helper()
	in := map[string][]byte{}
	addSnap := func(name string, s *hostio.Snapshot) {
		for k, rec := range s.Commands {
			if strings.HasPrefix(k, "lvm fullreport") {
				in[name+": "+k] = rec.Result.Stdout
			}
		}
	}
	for _, glob := range []string{"testdata/snapshots/*.txtar", "../reconcile/plan/testdata/snapshots/*.txtar"} {
		files, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			s, err := hostio.ReadSnapshotFile(f)
			if err != nil {
				t.Fatal(err)
			}
			addSnap(f, s)
		}
	}
	for _, name := range []string{"scale-thin", "scale-vdo", "scale-vdo-50"} {
		addSnap(name, scaleSnapshot(t, name))
	}
	corpus, err := filepath.Glob("testdata/fuzz/FuzzParseFullReport/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range corpus {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, lit, _ := strings.Cut(strings.TrimSpace(string(b)), "\n[]byte(")
		s, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		in[f] = []byte(s)
	}
	if len(in) < 20 {
		t.Fatalf("only %d reports found", len(in))
	}
	// One small whole report, cut at every byte and spoiled at some.
	small := in["testdata/snapshots/thin.txtar: "+fullReportCmd.String()]
	if len(small) == 0 {
		t.Fatal("testdata/snapshots/thin.txtar has no full report")
	}
	for n := 0; n < len(small); n += 1 + n/50 {
		in[fmt.Sprintf("thin cut at %d", n)] = small[:n]
	}
	for _, at := range []int{0, 1, 7, len(small) / 3, len(small) / 2, len(small) - 2} {
		for _, c := range []byte{'"', '\\', '{', ']', 'x', 0xff} {
			b := bytes.Clone(small)
			b[at] = c
			in[fmt.Sprintf("thin with %q at %d", c, at)] = b
		}
	}
	// Escapes, which LVM's own output rarely holds, take the decoder's
	// slow path for strings: "\u006d" is the "m" of every "lvm2".
	if esc := bytes.ReplaceAll(small, []byte(`"lvm2"`), []byte(`"lv\u006d2"`)); bytes.Equal(esc, small) {
		t.Fatal("the thin report holds no \"lvm2\"")
	} else {
		in["thin with escapes"] = esc
	}
	return in
}

// chunked is a Cmd.Consume's next over b: each call hands out up to the next
// size() bytes more, done with the last.
func chunked(b []byte, size func() int) func() ([]byte, bool) {
	n := 0
	return func() ([]byte, bool) {
		n = min(len(b), n+size())
		return b[:n], n == len(b)
	}
}

// TestDecodeReportStream: the report decoded as it grows, in pieces of
// one byte, of a few and of thousands, is what decoding it whole gives,
// the same rows or the same error, for every report the repository holds
// and for them cut short or spoiled.
func TestDecodeReportStream(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for name, b := range reportInputs(t) {
		want, wantErr := lvmjson.DecodeRows(b, parsedSubreport, false)
		sizes := map[string]func() int{
			"1":      func() int { return 1 },
			"7":      func() int { return 7 },
			"random": func() int { return 1 + rng.Intn(70000) },
		}
		if len(b) > 1<<20 {
			delete(sizes, "1") // a few seconds each for the scale reports
			delete(sizes, "7")
		}
		for how, size := range sizes {
			got, err := lvmjson.DecodeStream(chunked(b, size), parsedSubreport)
			if fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Fatalf("%s in pieces of %s: error %v, whole: %v", name, how, err, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s in pieces of %s: the report differs from the whole one's", name, how)
			}
		}
	}
}

// streamRunner serves a replay with Cmd.Consume, the output of each
// command in pieces of at most 4 KiB.
type streamRunner struct {
	hostio.Runner
	calls int
}

func (r *streamRunner) Run(ctx context.Context, c hostio.Cmd) (hostio.Result, error) {
	res, err := r.Runner.Run(ctx, c)
	if c.Consume != nil {
		r.calls++
		if err == nil {
			rng := rand.New(rand.NewSource(int64(len(res.Stdout))))
			c.Consume(chunked(res.Stdout, func() int { return 1 + rng.Intn(4096) }))
		}
	}
	return res, err
}

// TestProbeStreamed: a probe pass that decodes the report as it is
// written observes the host exactly as one that decodes it afterwards,
// on every guest capture, the failed VDO report of scale-vdo (exit 5, its
// retry) among them.
func TestProbeStreamed(t *testing.T) {
	snaps := map[string]*hostio.Snapshot{}
	for _, glob := range []string{"testdata/snapshots/*.txtar", "../reconcile/plan/testdata/snapshots/*.txtar"} {
		files, _ := filepath.Glob(glob)
		for _, f := range files {
			s, err := hostio.ReadSnapshotFile(f)
			if err != nil {
				t.Fatal(err)
			}
			snaps[f] = s
		}
	}
	for _, name := range []string{"scale-thin", "scale-vdo"} {
		snaps[name] = scaleSnapshot(t, name)
	}
	for name, s := range snaps {
		want, wantErr := Probe(context.Background(), hostio.Replay(s))
		src := hostio.Replay(s)
		sr := &streamRunner{Runner: src.Runner}
		src.Runner = sr
		got, err := Probe(context.Background(), src)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("%s: streamed pass error %v, the other's %v", name, err, wantErr)
		}
		if sr.calls != 1 {
			t.Fatalf("%s: %d commands streamed, want the report alone", name, sr.calls)
		}
		diff, err := model.Diff(want, got, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(diff) > 0 {
			t.Fatalf("%s: the streamed pass observed another host:\n%s", name, strings.Join(diff, "\n"))
		}
	}
}

// streamBuilt builds the objects of report b as a probe pass does while
// LVM writes it, handed over in pieces of size(); gaveUp tells whether the
// builder fell back to building from the whole report.
func streamBuilt(b []byte, size func() int) (o *lvmObjects, err error, gaveUp bool) {
	sb := newStreamBuilder()
	rep, err := lvmjson.DecodeStreamTo(chunked(b, size), parsedSubreport, sb.watch())
	if err != nil {
		return nil, fmt.Errorf("lvm fullreport: %w", err), true
	}
	gaveUp = sb.gaveUp || sb.elemEnd != len(rep.Report)
	o, err = sb.objects(rep)
	return o, err, gaveUp
}

// TestStreamBuild: the PVs, VGs and LVs built while the report is decoded
// are those parseFullReport builds from the whole report, or its error,
// for every report the repository holds and for them cut short or
// spoiled; and every report LVM wrote on a guest is built as it streams,
// not again after it.
func TestStreamBuild(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	streamed := 0
	for name, b := range reportInputs(t) {
		want, wantErr := parseFullReport(b)
		got, err, gaveUp := streamBuilt(b, func() int { return 1 + rng.Intn(9000) })
		if fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("%s: streamed build error %v, whole: %v", name, err, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: the streamed build differs from the whole one's", name)
		}
		guest := strings.HasSuffix(name, ": "+fullReportCmd.String()) && !strings.Contains(name, "fuzz")
		if guest && wantErr == nil && gaveUp {
			t.Errorf("%s: the builder gave up on a report LVM wrote", name)
		}
		if !gaveUp {
			streamed++
		}
	}
	if streamed < 10 {
		t.Fatalf("only %d reports built as they streamed", streamed)
	}
}
