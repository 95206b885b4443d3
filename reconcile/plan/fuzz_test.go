package plan

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

	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/schema"
)

// fuzzHosts are the node snapshots bundled with keel, replayed once.
var fuzzHosts = sync.OnceValues(func() ([]*model.Host, error) {
	var paths []string
	for _, g := range []string{"../../examples/nodes/*.txtar", "../../probes/testdata/snapshots/*.txtar", "testdata/snapshots/*.txtar"} {
		m, err := filepath.Glob(g)
		if err != nil {
			return nil, err
		}
		paths = append(paths, m...)
	}
	var hosts []*model.Host
	for _, p := range paths {
		s, err := hostio.ReadSnapshotFile(p)
		if err != nil {
			return nil, err
		}
		h, err := probes.Probe(context.Background(), hostio.Replay(s))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		hosts = append(hosts, h)
	}
	return hosts, nil
})

// FuzzLoadPlan runs the whole path a desired state takes: CUE text, the
// schema, keel's checks, then Plan against every bundled node snapshot. No
// input may panic; an input the loader accepts must plan on every host with
// every LVM size argument carrying a unit. The seeds (every example, every
// desired state of the tests, every bad input, and testdata/fuzz) run under
// plain go test.
func FuzzLoadPlan(f *testing.F) {
	var seeds []string
	for _, g := range []string{"../../examples/*.cue", "testdata/desired/*.cue", "../../schema/testdata/bad/*.cue"} {
		m, _ := filepath.Glob(g)
		seeds = append(seeds, m...)
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	hosts, err := fuzzHosts()
	if err != nil {
		f.Fatal(err)
	}
	l := schema.NewLoader()
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := l.LoadFiles([]schema.File{{Name: "fuzz.cue", Data: data}})
		if err != nil {
			var e *schema.Error
			if !errors.As(err, &e) {
				t.Fatalf("error is %T, want *schema.Error: %v", err, err)
			}
			return
		}
		for _, h := range hosts {
			r := Plan(d.Config, h)
			for _, a := range r.Actions {
				for _, argv := range a.Commands {
					checkSizeUnits(t, argv)
				}
			}
		}
	})
}

// checkSizeUnits fails when an LVM size option's argument has no unit.
func checkSizeUnits(t *testing.T, argv []string) {
	for i := 0; i+1 < len(argv); i++ {
		if _, ok := lvmSizeOptions[argv[i]]; !ok {
			continue
		}
		arg := strings.TrimPrefix(argv[i+1], "+")
		if _, err := strconv.ParseUint(arg, 10, 64); err == nil {
			t.Errorf("%s %s without a unit: %s", argv[i], argv[i+1], strings.Join(argv, " "))
		}
	}
}
