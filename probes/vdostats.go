package probes

import (
	"context"
	"errors"
	"sync"
)

// vdoStatsCmd asks the VDO target dmName for its statistics.
func vdoStatsCmd(dmName string) Cmd {
	return Cmd{Name: "dmsetup", Args: []string{"message", dmName, "0", "stats"}, ReadOnly: true}
}

// errNotPrefetched says that no statistics were fetched ahead for a device.
var errNotPrefetched = errors.New("vdo statistics not prefetched")

// vdoStatsPrefetch reads the statistics of every VDO target as soon as the
// device-mapper table is in, while lvm fullreport still runs: the pools are
// matched to their LVs only after the report, and reading the statistics
// then would put the message on the pass's critical path.
type vdoStatsPrefetch struct {
	mu   sync.Mutex
	outs map[string]cmdOut
}

// start launches one read per VDO target in the `dmsetup table` output,
// counted in wg. An unparsable table starts nothing (the pass reports it).
func (v *vdoStatsPrefetch) start(ctx context.Context, src Source, table []byte, wg *sync.WaitGroup) {
	m, err := parseDMLines("dmsetup table", table)
	if err != nil {
		return
	}
	for name, lines := range m {
		if len(lines) != 1 || lines[0].Target != "vdo" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := run(ctx, src, vdoStatsCmd(name))
			v.mu.Lock()
			defer v.mu.Unlock()
			if v.outs == nil {
				v.outs = map[string]cmdOut{}
			}
			v.outs[name] = cmdOut{Result{Stdout: out}, err}
		}()
	}
}

// get returns what the prefetch read for dmName, or errNotPrefetched. It is
// called after the pass's first phase, once every prefetch has finished.
func (v *vdoStatsPrefetch) get(dmName string) ([]byte, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	o, ok := v.outs[dmName]
	if !ok {
		return nil, errNotPrefetched
	}
	return o.res.Stdout, o.err
}
