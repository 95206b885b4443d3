package probes

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
)

// vdoStatsCmd asks the VDO target dmName for its statistics.
func vdoStatsCmd(dmName string) hostio.Cmd {
	return hostio.Cmd{Name: "dmsetup", Args: []string{"message", dmName, "0", "stats"}, ReadOnly: true}
}

// errNotPrefetched says that no statistics were fetched ahead for a device.
var errNotPrefetched = errors.New("vdo statistics not prefetched")

// vdoStatsPrefetch reads the statistics of every VDO target as soon as the
// device-mapper table is in, while lvm fullreport still runs: the pools are
// matched to their LVs only after the report, and reading the statistics
// then would put the message on the pass's critical path.
//
// It reads each VDO target's on-disk layout (the geometry and super block
// of its storage device, readVDOLayout) ahead too: the device is in the
// target's table line as /dev/dm-<minor> (lvm2 writes it so in
// _vdo_emit_segment_line, device_mapper/libdm-deptree.c: "current VDO
// requires device path"; dm-vdo prints it back, admin-guide/device-mapper/
// vdo.rst), and its
// /dev/mapper name, the path the pass reads, is in sysfs (dm/name), so the
// two reads leave the time after the report, and the pass ends sooner
// after lvm fullreport (docs/benchmark-history.md).
//
// The layout reads are not counted in the pass's WaitGroup: a pass whose
// context ends (a preempted daemon pass) does not wait for a read in
// flight on a slow device, as it does not for its read-only commands
// (runner.go); the pass that goes on waits for it in probeVDOPool.
type vdoStatsPrefetch struct {
	mu      sync.Mutex
	outs    map[string]cmdOut
	layouts map[string]*layoutOut // by /dev/mapper path
}

// layoutOut is one VDO layout read ahead; l and err are set when done
// closes.
type layoutOut struct {
	done chan struct{}
	l    *model.VDOLayout
	err  error
}

// start launches one read per VDO target in the `dmsetup table` output,
// counted in wg. An unparsable table starts nothing (the pass reports it).
func (v *vdoStatsPrefetch) start(ctx context.Context, src hostio.Source, table []byte, wg *sync.WaitGroup) {
	m, err := parseDMLines("dmsetup table", table)
	if err != nil {
		return
	}
	for name, lines := range m {
		if len(lines) != 1 || lines[0].Target != "vdo" {
			continue
		}
		if dev := vdoStorageDevice(src.FS, lines[0].Args); dev != "" {
			o := &layoutOut{done: make(chan struct{})}
			v.mu.Lock()
			if v.layouts == nil {
				v.layouts = map[string]*layoutOut{}
			}
			v.layouts[dev] = o
			v.mu.Unlock()
			go func() {
				defer close(o.done)
				defer caught(&o.err, "vdo layout of "+dev) // no one may be waiting to catch it
				o.l, o.err = readVDOLayout(src.FS, dev)
			}()
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
			v.outs[name] = cmdOut{hostio.Result{Stdout: out}, err}
		}()
	}
}

// vdoStorageDevice returns the /dev/mapper path of the storage device in a
// vdo target's table arguments ("V4 /dev/dm-0 ..."), or "" when it is no
// device-mapper device or its name cannot be read (the pass then reads the
// layout after the report, as before).
func vdoStorageDevice(fsys hostio.FS, args string) string {
	f := strings.Fields(args)
	if len(f) < 2 {
		return ""
	}
	k, ok := strings.CutPrefix(f[1], "/dev/")
	if !ok || !strings.HasPrefix(k, "dm-") || strings.Contains(k, "/") {
		return ""
	}
	name, err := readTrim(fsys, sysBlock+"/"+k+"/dm/name")
	if err != nil || name == "" {
		return ""
	}
	return devMapperPrefix + name
}

// layout returns the layout read ahead from dev once the read ended (or
// ctx's error if ctx ends first), and whether one was started.
func (v *vdoStatsPrefetch) layout(ctx context.Context, dev string) (*model.VDOLayout, bool, error) {
	v.mu.Lock()
	o := v.layouts[dev]
	v.mu.Unlock()
	if o == nil {
		return nil, false, nil
	}
	select {
	case <-o.done:
		return o.l, true, o.err
	case <-ctx.Done():
		return nil, true, ctx.Err()
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
