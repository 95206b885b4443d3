package probes

import (
	"context"
	"errors"
	"maps"
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
// then would put the message on the pass's critical path. From the same
// statistics it foresees a report that will fail on vdo_saving_percent and
// runs its retry at once (earlyRetry).
type vdoStatsPrefetch struct {
	mu   sync.Mutex
	outs map[string]cmdOut
	// early is the retry run beside the report, when the statistics said
	// the report would fail; zero when none ran.
	early struct {
		cmd Cmd
		out cmdOut
	}
	// devices, when set, limits the early retry to them, as the pass's
	// report is when a device is stuck suspended (suspended.go).
	devices []string
}

// start launches one read per VDO target in the `dmsetup table` output,
// counted in wg, and then, if the statistics foretell that lvm fullreport
// fails on a pool's vdo_saving_percent, the retry of the pools' VGs. An
// unparsable table starts nothing (the pass reports it).
func (v *vdoStatsPrefetch) start(ctx context.Context, src Source, table []byte, wg *sync.WaitGroup) {
	m, err := parseDMLines("dmsetup table", table)
	if err != nil {
		return
	}
	var reads sync.WaitGroup
	for name, lines := range m {
		if len(lines) != 1 || lines[0].Target != "vdo" {
			continue
		}
		wg.Add(1)
		reads.Add(1)
		go func() {
			defer wg.Done()
			defer reads.Done()
			out, err := run(ctx, src, vdoStatsCmd(name))
			v.mu.Lock()
			defer v.mu.Unlock()
			if v.outs == nil {
				v.outs = map[string]cmdOut{}
			}
			v.outs[name] = cmdOut{Result{Stdout: out}, err}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		// A panic while foreseeing only means no early retry: the same
		// statistics are parsed again for the pools (probeVDOPool), where
		// a panic fails the pass with its stack.
		defer func() { _ = recover() }()
		reads.Wait()
		v.mu.Lock()
		stats := maps.Clone(v.outs)
		v.mu.Unlock()
		retry, ok := earlyRetry(stats)
		if !ok {
			return
		}
		if v.devices != nil {
			retry = withDevices(retry, v.devices)
		}
		res, err := runResult(ctx, src, retry)
		v.mu.Lock()
		defer v.mu.Unlock()
		v.early.cmd, v.early.out = retry, cmdOut{res, err}
	}()
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

// earlyResult is the output of the retry run beside the report when it is
// retry itself (the same argv), and ok false otherwise: none ran, or the
// report failed otherwise than foreseen (other VGs, other fields, an LVM
// whose LV fields are not earlyLVFields), and retry must run now. Called
// after the pass's first phase.
func (v *vdoStatsPrefetch) earlyResult(retry Cmd) (cmdOut, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.early.cmd.Name == "" || v.early.cmd.String() != retry.String() {
		return cmdOut{}, false
	}
	return v.early.out, true
}
