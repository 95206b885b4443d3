package probes

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/hostio"
)

// fixedRunner answers every command with one output, or an error.
type fixedRunner struct {
	out  []byte
	err  error
	seen []hostio.Cmd
}

func (r *fixedRunner) Run(_ context.Context, c hostio.Cmd) (hostio.Result, error) {
	r.seen = append(r.seen, c)
	return hostio.Result{Stdout: r.out}, r.err
}

// The output of `lvm vgs --reportformat json -o vg_name,vg_seqno`, captured
// in the guest by e2e/signal (testdata/vgs/seqno.json).
func TestVGSeqnos(t *testing.T) {
	b, err := os.ReadFile("testdata/vgs/seqno.json")
	if err != nil {
		t.Fatal(err)
	}
	r := &fixedRunner{out: b}
	got, err := VGSeqnos(context.Background(), hostio.Source{Runner: r})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["sigvg"] != 13 {
		t.Errorf("seqnos %v, want sigvg 13", got)
	}
	if len(r.seen) != 1 || r.seen[0].String() != vgSeqnoCmd.String() {
		t.Errorf("ran %v", r.seen)
	}
	bad := strings.Replace(string(b), `"13"`, `"x"`, 1)
	if _, err := VGSeqnos(context.Background(), hostio.Source{Runner: &fixedRunner{out: []byte(bad)}}); err == nil || !strings.Contains(err.Error(), "vg sigvg: field vg_seqno") {
		t.Errorf("a bad seqno: err %v", err)
	}
	if _, err := VGSeqnos(context.Background(), hostio.Source{Runner: &fixedRunner{err: errors.New("no lvm")}}); err == nil {
		t.Error("a runner error gave no error")
	}
}
