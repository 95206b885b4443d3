// Package probes is keel's read-only view of a host: it runs lvm, dmsetup
// and lvmconfig, reads sysfs, procfs and a few configuration files, and
// turns what it sees into one observed model (Host). It reads only through
// a hostio.Source, so a probe pass can be recorded into a node snapshot and
// replayed anywhere by the same code path.
package probes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/internal/lvmjson"
	"github.com/keel-storage/keel/probes/model"
)

// Commands run once per probe pass whatever the number of LVs; Probe adds
// one `dmsetup message <pool> 0 stats` per active VDO pool.
var (
	dmTableCmd   = hostio.Cmd{Name: "dmsetup", Args: []string{"table"}, ReadOnly: true}
	dmStatusCmd  = hostio.Cmd{Name: "dmsetup", Args: []string{"status"}, ReadOnly: true}
	lvmConfigCmd = hostio.Cmd{Name: "lvmconfig", Args: []string{"--typeconfig", "full"}, ReadOnly: true}
)

// LVMConfigCmd is the command by which a probe pass reads LVM's merged
// configuration (lvm.conf, lvmlocal.conf, tag files and the binary's
// defaults), as LVM itself reads it.
func LVMConfigCmd() hostio.Cmd { return lvmConfigCmd }

// Files and directories the probe reads.
const (
	lvmConfPath     = "/etc/lvm/lvm.conf"
	sysBlock        = "/sys/block"
	sysClassBlock   = "/sys/class/block"
	sysFsBcache     = "/sys/fs/bcache"
	devDiskByID     = "/dev/disk/by-id"
	devDiskByPath   = "/dev/disk/by-path"
	cpuOnlinePath   = "/sys/devices/system/cpu/online"
	meminfoPath     = "/proc/meminfo"
	hostnamePath    = "/proc/sys/kernel/hostname"
	osreleasePath   = "/proc/sys/kernel/osrelease"
	devMapperPrefix = "/dev/mapper/"
)

// queueFiles are read from /sys/block/<dev>/queue/.
var queueFiles = []string{"rotational", "logical_block_size", "physical_block_size", "write_zeroes_max_bytes",
	"discard_max_bytes", "discard_max_hw_bytes", "discard_granularity"}

// cmdOut is what one command of a pass gave: its Result (stdout and exit
// status) and the error that folds a could-not-run and a non-zero exit.
type cmdOut struct {
	res hostio.Result
	err error
}

// coreOuts are the outputs of the commands every pass runs, by command.
type coreOuts struct {
	report cmdOut // lvm fullreport (fullReportCmd, maybe with --devices)
	table  cmdOut // dmsetup table
	status cmdOut // dmsetup status
	config cmdOut // lvmconfig --typeconfig full
}

// run runs c and folds a could-not-run error and a non-zero exit into one
// error. A panic while it runs is that command's error too.
func run(ctx context.Context, src hostio.Source, c hostio.Cmd) (out []byte, err error) {
	res, err := runResult(ctx, src, c)
	return res.Stdout, err
}

// runResult is run keeping the exit status: Result holds stdout and the
// exit status (stdout is nil when the command could not run).
func runResult(ctx context.Context, src hostio.Source, c hostio.Cmd) (res hostio.Result, err error) {
	defer caught(&err, c.String())
	res, err = src.Runner.Run(ctx, c)
	if err != nil {
		return hostio.Result{ExitCode: -1}, err
	}
	if err := res.Err(c); err != nil {
		return hostio.Result{Stdout: res.Stdout, ExitCode: res.ExitCode}, err
	}
	return hostio.Result{Stdout: res.Stdout}, nil
}

// streamedReport is the full report decoded while LVM wrote it. ok is
// set only when the decoding read a whole, valid report; otherwise (a
// decoding error, a panic, a command that could not run) the pass decodes
// the output it got, as without streaming, so a failure reads the same.
type streamedReport struct {
	rep   lvmjson.Report
	ok    bool
	build *streamBuilder // the objects, built as the rows came in
}

// decode is the report's Cmd.Consume.
func (s *streamedReport) decode(next func() ([]byte, bool)) {
	var err error
	defer func() {
		if recover() != nil {
			s.ok = false // decoded again after the command, panicking there as before
		}
	}()
	s.build = newStreamBuilder()
	s.rep, err = lvmjson.DecodeStreamTo(next, parsedSubreport, s.build.watch())
	s.ok = err == nil
}

// caught turns a panic in a probe goroutine into *errp, with the stack, so
// that a bad reading fails the pass (the daemon reports it and goes on)
// instead of ending the process: a panic in a goroutine cannot be
// recovered by whoever called Probe.
func caught(errp *error, what string) {
	if r := recover(); r != nil {
		*errp = fmt.Errorf("%s: panic: %v\n%s", what, r, debug.Stack())
	}
}

// panics collects the panics of a pass's goroutines.
type panics struct {
	mu   sync.Mutex
	errs []error
}

// catch is deferred in a goroutine: a panic there is recorded as what's.
func (p *panics) catch(what string) {
	var err error
	defer func() {
		if err != nil {
			p.mu.Lock()
			p.errs = append(p.errs, err)
			p.mu.Unlock()
		}
	}()
	caught(&err, what)
}

// Probe runs one probe pass over src and returns the observed host. The
// independent commands run concurrently. An unreadable object is recorded in
// its Errors (or Host.Errors) and the pass goes on; the returned error is
// non-nil only when a core command (lvm fullreport, dmsetup table or
// status) failed or ctx ended, and the Host is still returned.
func Probe(ctx context.Context, src hostio.Source) (*model.Host, error) {
	return ProbeWith(ctx, src, Options{})
}

// ProbeWith is Probe with the settings of the desired state (opt).
func ProbeWith(ctx context.Context, src hostio.Source, opt Options) (*model.Host, error) {
	h := &model.Host{PVs: map[string]*model.PV{}, VGs: map[string]*model.VG{}, LVs: map[string]*model.LV{}, VDOPools: map[string]*model.VDOPool{},
		ThinPools: map[string]*model.ThinPool{}, Bcache: map[string]*model.Bcache{}, CacheSets: map[string]*model.CacheSet{},
		Queues: map[string]*model.Queue{}, ByID: map[string][]string{}, DM: map[string]*model.DMDevice{}, KeelFiles: map[string]*model.KeelFile{}}
	reportCmd := fullReportCmd
	var outs coreOuts
	var (
		wg      sync.WaitGroup
		stats   vdoStatsPrefetch
		crashed panics
	)
	// Before any LVM command: a device left suspended would hang it
	// (suspended.go).
	var readable []string
	if stuck := stuckSuspended(ctx, src.FS, src.SuspendWait); stuck != nil {
		h.Suspended = suspendedNames(stuck)
		h.Commands = lvmCommands(src.FS)
		var err error
		if readable, err = readableDevices(src.FS, stuck); err != nil {
			// Without the list LVM would wait on them: no LVM report.
			return h, fmt.Errorf("probe: devices %s are suspended, and the devices LVM may read are unknown: %w",
				strings.Join(h.Suspended, ", "), err)
		}
		reportCmd = withDevices(reportCmd, readable)
		h.Errors = append(h.Errors, fmt.Sprintf("device-mapper devices suspended for more than %v: %s; LVM read the host without them and what is stacked on them (--devices)",
			src.SuspendWait, strings.Join(h.Suspended, ", ")))
	}
	// The report is decoded as LVM writes it where the runner can show it
	// (Cmd.Consume): at thousands of LVs, decoding it after LVM exits was
	// the largest part of a pass beyond LVM's own time.
	var streamed streamedReport
	reportCmd.Consume = streamed.decode
	var sys sysfsView
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer crashed.catch("sysfs and host files")
		sys = readSysfs(src.FS)
		probeHostFiles(src.FS, h)
		ProbeProxmox(src, h, opt)
		probePVEStorageVersion(ctx, src, h)
		probeKeelFiles(src.FS, h)
		probeGuests(src.FS, h)
	}()
	// Invariant: lvm fullreport, the longest command, is started last. The
	// goroutine started last is the one the scheduler runs first on this P
	// once this goroutine waits (runnext), while idle Ps steal the others
	// (running the last they stole first); started first, the report would
	// begin after dmsetup table, later than it can.
	var lvmCfg model.LVMConfig
	for _, l := range []struct {
		c    hostio.Cmd
		out  *cmdOut
		then func(out []byte) // run on success, in the command's goroutine
		// after, when set, runs in the command's goroutine once it ended
		after func(o cmdOut)
	}{
		// The files of LVM's configuration are read beside the report,
		// not after it: the devices file's name is lvmconfig's.
		{c: lvmConfigCmd, out: &outs.config, after: func(o cmdOut) { lvmCfg = readLVMConfig(src.FS, o) }},
		{c: dmStatusCmd, out: &outs.status},
		{c: dmTableCmd, out: &outs.table, then: func(out []byte) { stats.start(ctx, src, out, &wg) }},
		{c: reportCmd, out: &outs.report},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer crashed.catch(l.c.String())
			res, err := runResult(ctx, src, l.c)
			*l.out = cmdOut{res, err}
			if l.then != nil && err == nil {
				l.then(res.Stdout)
			}
			if l.after != nil {
				l.after(*l.out)
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return h, fmt.Errorf("probe: %w", err)
	}

	var core []error
	fail := func(err error) {
		core = append(core, err)
		h.Errors = append(h.Errors, err.Error())
	}
	reportErr := outs.report.err
	var objs *lvmObjects
	if reportErr != nil && outs.report.res.ExitCode == 5 {
		// Exit 5 with only failed fields in the log: LVM left those LVs
		// out; ask again for their VGs without the fields (lvm_fieldfail.go).
		if retry, vgs, note, ok := fieldFailureRetry(outs.report.res.Stdout); ok {
			if readable != nil {
				retry = withDevices(retry, readable)
			}
			h.Errors = append(h.Errors, note)
			// The failed report's other VGs are decoded while the retry
			// runs: at thousands of LVs their rows take as long to read
			// as LVM takes to report one small VG again.
			var (
				failed  lvmjson.Report
				ferr    error
				decoded = make(chan struct{})
			)
			if vgs == nil { // every VG asked again: nothing to keep
				close(decoded)
			} else if streamed.ok {
				failed = streamed.rep
				close(decoded)
			} else {
				go func() {
					defer close(decoded)
					defer caught(&ferr, "lvm fullreport: decoding the failed report")
					failed, ferr = lvmjson.DecodeRows(outs.report.res.Stdout, parsedSubreport, false)
				}()
			}
			out, err := run(ctx, src, retry)
			<-decoded
			switch {
			case err != nil:
				reportErr = err
			case vgs == nil: // every VG asked again
				objs, reportErr = parseFullReport(out)
			default:
				objs, reportErr = parseRetried(failed, ferr, out, vgs)
			}
		}
	} else if reportErr == nil && streamed.ok {
		objs, reportErr = streamed.build.objects(streamed.rep)
	} else if reportErr == nil {
		objs, reportErr = parseFullReport(outs.report.res.Stdout)
	}
	if reportErr != nil {
		fail(reportErr)
	} else {
		h.PVs, h.VGs, h.LVs = objs.PVs, objs.VGs, objs.LVs
	}
	tables, statuses := map[string][]model.DMLine{}, map[string][]model.DMLine{}
	for _, d := range []struct {
		which string
		out   cmdOut
		lines *map[string][]model.DMLine
	}{{"dmsetup table", outs.table, &tables}, {"dmsetup status", outs.status, &statuses}} {
		if d.out.err != nil {
			fail(d.out.err)
			continue
		}
		m, err := parseDMLines(d.which, d.out.res.Stdout)
		if err != nil {
			fail(err)
			continue
		}
		*d.lines = m
	}
	for name, t := range tables {
		h.DM[name] = &model.DMDevice{Name: name, Table: t, Status: statuses[name]}
	}
	h.LVMConfig = lvmCfg

	sys.apply(h)
	resolvePVs(src.FS, h, &sys)
	buildMultipath(src.FS, h)
	buildThinPools(h)
	pools := buildVDOPools(h)
	for _, p := range pools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer crashed.catch("vdo pool " + p.LV)
			probeVDOPool(ctx, src, h, p, &stats)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer crashed.catch(lvmlockctlInfoCmd.String())
		probeLvmlockd(ctx, src, h)
	}()
	wg.Wait()
	if err := ctx.Err(); err != nil {
		// Ended during the VDO pools' reads (a pool waiting for its layout
		// read ahead returns at once): the pass is cut short, as when ctx
		// ends before the report is in.
		return h, fmt.Errorf("probe: %w", err)
	}
	if hasPvmove(h) {
		// Whose move it is, and whether anyone polls it, is judged from
		// the processes polling moves (plan: vg.pvmove_other).
		var err error
		if h.Pollers, err = readPollers(src.FS); err != nil {
			h.Errors = append(h.Errors, "the processes polling a pvmove: "+err.Error())
		}
	}
	h.Errors = append(h.Errors, sys.errors...)
	for _, err := range crashed.errs {
		fail(err)
	}
	if len(core) > 0 {
		return h, fmt.Errorf("probe: %w", errors.Join(core...))
	}
	return h, nil
}

// readLVMConfig is LVM's configuration: the values lvmconfig gave (o),
// lvm.conf's text and the files it cascades to (readLVMCascade).
func readLVMConfig(fsys hostio.FS, o cmdOut) model.LVMConfig {
	var cfg model.LVMConfig
	if o.err != nil {
		cfg.Errors = append(cfg.Errors, o.err.Error())
	} else if v, err := parseLVMConfig(o.res.Stdout); err != nil {
		cfg.Errors = append(cfg.Errors, err.Error())
	} else {
		cfg.Values = v
	}
	if b, err := fsys.ReadFile(lvmConfPath); err != nil {
		cfg.Errors = append(cfg.Errors, fmt.Sprintf("%s: %v", lvmConfPath, err))
	} else {
		cfg.LVMConf = string(b)
	}
	readLVMCascade(fsys, &cfg)
	return cfg
}

func probeHostFiles(fsys hostio.FS, h *model.Host) {
	note := func(p string, err error) { h.Errors = append(h.Errors, fmt.Sprintf("%s: %v", p, err)) }
	if b, err := fsys.ReadFile(hostnamePath); err != nil {
		note(hostnamePath, err)
	} else {
		h.Hostname = strings.TrimSpace(string(b))
	}
	if b, err := fsys.ReadFile(osreleasePath); err != nil {
		note(osreleasePath, err)
	} else {
		h.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := fsys.ReadFile(cpuOnlinePath); err != nil {
		note(cpuOnlinePath, err)
	} else if n, err := parseCPUList(b); err != nil {
		note(cpuOnlinePath, err)
	} else {
		h.CPUs = n
	}
	if b, err := fsys.ReadFile(meminfoPath); err != nil {
		note(meminfoPath, err)
	} else if m, err := parseMeminfo(b); err != nil {
		note(meminfoPath, err)
	} else {
		h.Memory = m
	}
}

// probeKeelFiles reads the files keel generates. A file a replayed snapshot
// did not record (captured before keel read it) is unknown, not missing.
func probeKeelFiles(fsys hostio.FS, h *model.Host) {
	for _, p := range model.UdevRulePaths {
		f := &model.KeelFile{Path: p}
		switch b, err := fsys.ReadFile(p); {
		case err == nil:
			f.Content = string(b)
		case isNotExist(err):
			f.Missing = true
		default:
			f.Unknown = err.Error()
		}
		h.KeelFiles[p] = f
	}
	dir := &model.KeelFile{Path: model.LVMProfileDir}
	h.KeelFiles[dir.Path] = dir
	names, err := fsys.ReadDir(model.LVMProfileDir)
	switch {
	case isNotExist(err):
		dir.Missing = true
	case err != nil:
		dir.Unknown = err.Error()
	}
	for _, n := range names {
		if !strings.HasPrefix(n, model.KeelProfilePrefix) || !strings.HasSuffix(n, ".profile") {
			continue
		}
		p := path.Join(model.LVMProfileDir, n)
		f := &model.KeelFile{Path: p}
		if b, err := fsys.ReadFile(p); err != nil {
			f.Unknown = err.Error()
		} else {
			f.Content = string(b)
		}
		h.KeelFiles[p] = f
	}
}

// sysfsView is what the sysfs pass read, before it is joined with LVM's view.
type sysfsView struct {
	queues    map[string]*model.Queue
	byID      map[string][]string // kernel name → by-id names
	byPath    map[string][]string // kernel name → by-path names
	bcache    []*model.Bcache
	cacheSets []*model.CacheSet
	md        []*model.MDArray
	errors    []string
}

func readTrim(fsys hostio.FS, p string) (string, error) {
	b, err := fsys.ReadFile(p)
	return strings.TrimSpace(string(b)), err
}

func readSysfs(fsys hostio.FS) sysfsView {
	v := sysfsView{queues: map[string]*model.Queue{}, byID: map[string][]string{}}
	devs, err := fsys.ReadDir(sysBlock)
	if err != nil {
		v.errors = append(v.errors, fmt.Sprintf("%s: %v", sysBlock, err))
	}
	for _, dev := range devs {
		v.queues[dev] = readQueue(fsys, dev)
		if strings.HasPrefix(dev, "bcache") {
			v.bcache = append(v.bcache, readBcache(fsys, dev))
		}
		if isMDName(dev) {
			v.md = append(v.md, readMD(fsys, dev))
		}
	}
	var err2 error
	if v.byID, err2 = readLinks(fsys, devDiskByID, nil); err2 != nil && !isNotExist(err2) {
		v.errors = append(v.errors, fmt.Sprintf("%s: %v", devDiskByID, err2))
	}
	// by-path names only serve to match a declared PV path with its device
	// (removal.MatchPVs); a host or a snapshot without them is judged by
	// its other names, so an error reading them is not one of the host's.
	v.byPath, _ = readLinks(fsys, devDiskByPath, nil)
	if sets, err := fsys.ReadDir(sysFsBcache); err == nil {
		for _, s := range sets {
			if len(s) == 36 && strings.Count(s, "-") == 4 {
				v.cacheSets = append(v.cacheSets, readCacheSet(fsys, s))
			}
		}
	} else if !isNotExist(err) {
		v.errors = append(v.errors, fmt.Sprintf("%s: %v", sysFsBcache, err))
	}
	return v
}

func readQueue(fsys hostio.FS, dev string) *model.Queue {
	q := &model.Queue{Device: dev, Rotational: -1}
	base := sysBlock + "/" + dev
	bad := func(p string, err error) { q.Errors = append(q.Errors, fmt.Sprintf("%s: %v", p, err)) }
	if t, err := fsys.Readlink(base); err == nil {
		q.SysPath = t
		q.Transport = transportOf(t)
	} else {
		bad(base, err)
	}
	if s, err := readTrim(fsys, base+"/size"); err == nil {
		if n, err := strconv.ParseUint(s, 10, 64); err == nil {
			q.Size = n * 512
		} else {
			bad(base+"/size", err)
		}
	} else {
		bad(base+"/size", err)
	}
	for _, f := range queueFiles {
		p := base + "/queue/" + f
		s, err := readTrim(fsys, p)
		if err != nil {
			bad(p, err)
			continue
		}
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			bad(p, err)
			continue
		}
		switch f {
		case "rotational":
			q.Rotational = int(n)
		case "logical_block_size":
			q.LogicalBlockSize = n
		case "physical_block_size":
			q.PhysicalBlockSize = n
		case "write_zeroes_max_bytes":
			q.WriteZeroesMaxBytes = n
		case "discard_max_bytes":
			q.DiscardMaxBytes = n
		case "discard_max_hw_bytes":
			q.DiscardMaxHWBytes = n
		case "discard_granularity":
			q.DiscardGranularity = n
		}
	}
	if strings.HasPrefix(dev, "dm-") {
		q.DMName, _ = readTrim(fsys, base+"/dm/name")
		q.DMUUID, _ = readTrim(fsys, base+"/dm/uuid")
	}
	q.Holders, _ = fsys.ReadDir(base + "/holders")
	q.Slaves, _ = fsys.ReadDir(base + "/slaves")
	return q
}

// transportOf guesses a device's transport from its sysfs device path.
func transportOf(sysPath string) string {
	switch {
	case strings.Contains(sysPath, "/nvme/"):
		return "nvme"
	case strings.Contains(sysPath, "/usb"):
		return "usb"
	case strings.Contains(sysPath, "/ata"):
		return "sata"
	case strings.Contains(sysPath, "/virtio") && !strings.Contains(sysPath, "/host"):
		return "virtio"
	case strings.Contains(sysPath, "/host") && strings.Contains(sysPath, "/target"):
		return "scsi"
	case strings.Contains(sysPath, "/virtual/"):
		return "virtual"
	}
	return ""
}

// readFiles reads the named files of dir, trimmed; missing files are
// skipped, other failures listed.
func readFiles(fsys hostio.FS, dir string, names []string) (map[string]string, []string) {
	files := map[string]string{}
	var errs []string
	for _, f := range names {
		s, err := readTrim(fsys, dir+"/"+f)
		if err != nil {
			if !isNotExist(err) {
				errs = append(errs, fmt.Sprintf("%s/%s: %v", dir, f, err))
			}
			continue
		}
		files[f] = s
	}
	return files, errs
}

func readBcache(fsys hostio.FS, dev string) *model.Bcache {
	dir := sysBlock + "/" + dev + "/bcache"
	files, errs := readFiles(fsys, dir, bcacheBackingFiles)
	link, err := fsys.Readlink(dir + "/cache")
	if err != nil && !isNotExist(err) {
		errs = append(errs, fmt.Sprintf("%s/cache: %v", dir, err))
	}
	b := buildBcache(dev, files, link)
	b.Errors = append(errs, b.Errors...)
	return b
}

func readCacheSet(fsys hostio.FS, uuid string) *model.CacheSet {
	dir := sysFsBcache + "/" + uuid
	files, errs := readFiles(fsys, dir, cacheSetFiles)
	c := buildCacheSet(uuid, files)
	if ents, err := fsys.ReadDir(dir); err == nil {
		for _, e := range ents {
			if !strings.HasPrefix(e, "cache") || strings.Trim(e[len("cache"):], "0123456789") != "" || e == "cache" {
				continue
			}
			t, err := fsys.Readlink(dir + "/" + e)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s/%s: %v", dir, e, err))
				continue
			}
			// ".../block/sdb/bcache": the device is the element before "bcache".
			if path.Base(t) == "bcache" {
				c.CacheDevices = append(c.CacheDevices, path.Base(path.Dir(t)))
			}
		}
	} else {
		errs = append(errs, fmt.Sprintf("%s: %v", dir, err))
	}
	c.Errors = append(errs, c.Errors...)
	return c
}

func (v *sysfsView) apply(h *model.Host) {
	h.Queues = v.queues
	h.ByID = map[string][]string{}
	for k, ids := range v.byID {
		h.ByID[k] = slices.Sorted(slices.Values(ids))
	}
	if len(v.byPath) > 0 {
		h.ByPath = map[string][]string{}
		for k, ids := range v.byPath {
			h.ByPath[k] = slices.Sorted(slices.Values(ids))
		}
	}
	for _, b := range v.bcache {
		key := b.UUID
		if key == "" {
			key = "unknown:" + b.Device
		}
		b.BackingByID = append([]string(nil), v.byID[b.Backing]...)
		sort.Strings(b.BackingByID)
		h.Bcache[key] = b
	}
	for _, c := range v.cacheSets {
		h.CacheSets[c.UUID] = c
	}
	for _, a := range v.md {
		if h.MD == nil {
			h.MD = map[string]*model.MDArray{}
		}
		h.MD[a.Device] = a
	}
}

// resolvePVs finds each PV's kernel device, its by-id names, rotational
// flag and transport.
func resolvePVs(fsys hostio.FS, h *model.Host, v *sysfsView) {
	for _, pv := range h.PVs {
		dev := resolvePV(fsys, pv, v.byID)
		q := h.Queues[dev]
		if q == nil {
			// A partition: its queue belongs to the parent disk.
			t, err := fsys.Readlink(sysClassBlock + "/" + dev)
			if err != nil {
				pv.Errors = append(pv.Errors, fmt.Sprintf("pv %s: no block device %s in sysfs: %v", pv.Name, dev, err))
				continue
			}
			q = h.Queues[path.Base(path.Dir(t))]
		}
		if q != nil {
			pv.Rotational = q.Rotational
			pv.Transport = q.Transport
		}
	}
}

// resolvePV sets pv's kernel device (its name, or where its path links
// to) and its by-id names from byID (kernel name → names), and returns the
// device.
func resolvePV(fsys hostio.FS, pv *model.PV, byID map[string][]string) string {
	dev := path.Base(pv.Name)
	if t, err := fsys.Readlink(pv.Name); err == nil {
		dev = path.Base(t)
	}
	pv.Device = dev
	pv.ByID = slices.Sorted(slices.Values(byID[dev]))
	return dev
}

// readLinks maps the kernel device each symlink in dir points at to the
// links' names, leaving out the names skip says to (nil: none). The map is
// empty, never nil, when dir cannot be read; the error says why.
func readLinks(fsys hostio.FS, dir string, skip func(name string) bool) (map[string][]string, error) {
	out := map[string][]string{}
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return out, err
	}
	for _, name := range names {
		if skip != nil && skip(name) {
			continue
		}
		if t, err := fsys.Readlink(dir + "/" + name); err == nil {
			k := path.Base(t)
			out[k] = append(out[k], name)
		}
	}
	return out, nil
}

func truthy(v string) bool { return v != "" && v != "0" }

func buildThinPools(h *model.Host) {
	var users map[string][]string
	for _, lv := range h.LVs {
		if lv.SegType != "thin-pool" {
			continue
		}
		if users == nil {
			users = poolUsers(h, "thin")
		}
		tp := &model.ThinPool{VG: lv.VG, Name: lv.Name, LV: lv.FullName, DataSize: lv.Size, MetadataSize: lv.MetadataSize,
			DataPercent: lv.DataPercent, MetadataPercent: lv.MetadataPercent}
		seg := lv.Segments[0]
		if v := seg.Fields.Get("chunk_size"); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				tp.Errors = append(tp.Errors, fmt.Sprintf("thin pool %s: field chunk_size: %v", lv.FullName, err))
			}
			tp.ChunkSize = n
		}
		tp.Zero = truthy(seg.Fields.Get("zero"))
		tp.Discards = seg.Fields.Get("discards")
		tp.Monitor, tp.Profile = seg.Fields.Get("seg_monitor"), lv.Fields.Get("lv_profile")
		tp.ThinLVs = users[lv.FullName]
		if data := h.LVs[lv.DataLV]; data != nil && data.SegType == "vdo" {
			tp.DataVDO = data.Pool
		}
		if name, d := poolTarget(h, lv, lvm.LayerThinPool, "thin-pool"); d != nil && len(d.Status) == 1 && d.Status[0].Target == "thin-pool" {
			tp.DMName = name
			st, err := model.ParseThinPoolStatus(d.Status[0].Args)
			if err != nil {
				tp.Errors = append(tp.Errors, fmt.Sprintf("thin pool %s: %v", lv.FullName, err))
			}
			tp.Status = st
		}
		if lv.Active && tp.Status == nil && len(tp.Errors) == 0 {
			tp.Errors = append(tp.Errors, fmt.Sprintf("thin pool %s: active but no thin-pool target in dmsetup status", lv.FullName))
		}
		h.ThinPools[lv.FullName] = tp
	}
}

// poolUsers lists, by pool, the LVs of segment type segType that use it,
// sorted: one pass over the LVs for all pools.
func poolUsers(h *model.Host, segType string) map[string][]string {
	out := map[string][]string{}
	for _, lv := range h.LVs {
		if lv.SegType == segType && lv.Pool != "" {
			out[lv.Pool] = append(out[lv.Pool], lv.FullName)
		}
	}
	for _, names := range out {
		sort.Strings(names)
	}
	return out
}

// poolTarget finds the dm device of a pool LV whose one-line table has the
// given target: LVM puts it on the layer device (lvm.DMLayerName) or on the
// LV itself.
func poolTarget(h *model.Host, lv *model.LV, layer, target string) (string, *model.DMDevice) {
	for _, name := range []string{lvm.DMLayerName(lv.DMName, layer), lv.DMName} {
		if d := h.DM[name]; d != nil && len(d.Table) == 1 && d.Table[0].Target == target {
			return name, d
		}
	}
	return "", nil
}

func buildVDOPools(h *model.Host) []*model.VDOPool {
	var out []*model.VDOPool
	var users map[string][]string
	for _, lv := range h.LVs {
		if lv.SegType != "vdo-pool" {
			continue
		}
		if users == nil {
			users = poolUsers(h, "vdo")
		}
		p := &model.VDOPool{VG: lv.VG, Name: lv.Name, LV: lv.FullName, DataLV: lv.DataLV, Settings: map[string]string{}}
		if p.DataLV == "" {
			p.DataLV = lv.FullName + "_vdata"
		}
		for k, v := range lv.Fields.All() {
			if strings.HasPrefix(k, "vdo_") {
				p.Settings[k] = v
			}
		}
		for k, v := range lv.Segments[0].Fields.All() {
			if strings.HasPrefix(k, "vdo_") {
				p.Settings[k] = v
			}
		}
		p.VDOLVs = users[lv.FullName]
		p.Monitor, p.Profile = lv.Segments[0].Fields.Get("seg_monitor"), lv.Fields.Get("lv_profile")
		if name, d := poolTarget(h, lv, lvm.LayerVDOPool, "vdo"); d != nil {
			p.DMName = name
			t, err := parseVDOTable(d.Table[0].Length, d.Table[0].Args)
			if err != nil {
				p.Errors = append(p.Errors, fmt.Sprintf("vdo pool %s: %v", lv.FullName, err))
			}
			p.Table = t
			if len(d.Status) == 1 && d.Status[0].Target == "vdo" {
				st, err := model.ParseVDOStatus(d.Status[0].Args)
				if err != nil {
					p.Errors = append(p.Errors, fmt.Sprintf("vdo pool %s: %v", lv.FullName, err))
				}
				p.Status = st
			}
		}
		h.VDOPools[lv.FullName] = p
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LV < out[j].LV })
	return out
}

// probeVDOPool sends the stats message and reads the geometry and super
// block of an active pool, then places its metadata regions on PVs. It
// writes only to p and reads h, so pools can be probed concurrently.
func probeVDOPool(ctx context.Context, src hostio.Source, h *model.Host, p *model.VDOPool, pre *vdoStatsPrefetch) {
	var errs []string
	if p.DMName != "" {
		out, err := pre.get(p.DMName)
		if errors.Is(err, errNotPrefetched) {
			out, err = run(ctx, src, vdoStatsCmd(p.DMName))
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("vdo pool %s: %v", p.LV, err))
		} else if st, err := parseVDOStats(out); err != nil {
			errs = append(errs, fmt.Sprintf("vdo pool %s: %v", p.LV, err))
		} else {
			p.Stats = st
		}
		data := h.LVs[p.DataLV]
		if data != nil && data.Active {
			dev := devMapperPrefix + data.DMName
			l, ok, err := pre.layout(ctx, dev)
			if !ok {
				l, err = readVDOLayout(src.FS, dev)
			}
			if err != nil {
				errs = append(errs, fmt.Sprintf("vdo pool %s: %s: %v", p.LV, dev, err))
			} else {
				p.OnDisk = l
			}
		}
	}
	physical := uint64(0)
	switch {
	case p.Table != nil:
		physical = p.Table.PhysicalBlocks
	case h.LVs[p.DataLV] != nil:
		physical = h.LVs[p.DataLV].Size / model.VDOBlockSize
	}
	index := uint64(vdoDefaultIndex)
	if p.OnDisk != nil {
		index = p.OnDisk.Index.Count()
	}
	if p.OnDisk != nil || (p.Settings["vdo_index_memory_size"] == "268435456" && p.Settings["vdo_use_sparse_index"] != "1") {
		p.Computed = computeVDOLayout(physical, index)
	}
	layout := p.OnDisk
	if layout == nil {
		layout = p.Computed
	}
	if layout != nil && p.OnDisk != nil && p.Computed != nil &&
		(layout.Journal != p.Computed.Journal || layout.Summary != p.Computed.Summary) {
		errs = append(errs, fmt.Sprintf("vdo pool %s: on-disk journal %v/summary %v differ from the computed %v/%v",
			p.LV, layout.Journal, layout.Summary, p.Computed.Journal, p.Computed.Summary))
	}
	if layout != nil {
		p.Regions = placeRegions(h, h.LVs[p.DataLV], layout)
	}
	p.Errors = append(p.Errors, errs...)
}

func readVDOLayout(fsys hostio.FS, dev string) (*model.VDOLayout, error) {
	geo, err := fsys.ReadAt(dev, 0, model.VDOBlockSize)
	if err != nil {
		return nil, err
	}
	l, err := decodeVDOGeometry(geo)
	if err != nil {
		return nil, err
	}
	sb, err := fsys.ReadAt(dev, int64(l.SuperBlock.First)*model.VDOBlockSize, model.VDOBlockSize)
	if err != nil {
		return nil, err
	}
	if err := decodeVDOSuperBlock(sb, l); err != nil {
		return nil, err
	}
	return l, nil
}

// placeRegions maps the layout's metadata regions onto PVs through the
// linear segments of the _vdata LV.
func placeRegions(h *model.Host, data *model.LV, l *model.VDOLayout) []model.VDORegion {
	regions := []model.VDORegion{
		{Name: "index", Blocks: l.Index},
		{Name: "super block", Blocks: l.SuperBlock},
		{Name: "recovery journal", Blocks: l.Journal},
		{Name: "slab summary", Blocks: l.Summary},
	}
	if data == nil || h.VGs[data.VG] == nil || h.VGs[data.VG].ExtentSize < model.VDOBlockSize {
		return regions
	}
	per := h.VGs[data.VG].ExtentSize / model.VDOBlockSize
	for i := range regions {
		r := &regions[i]
		first, last := r.Blocks.First/per, r.Blocks.Last/per
		fast := true
		for _, seg := range data.Segments {
			if len(seg.PVRanges) != 1 {
				continue
			}
			segLast := seg.StartLE + seg.Extents - 1
			lo, hi := max(first, seg.StartLE), min(last, segLast)
			if lo > hi {
				continue
			}
			pr := seg.PVRanges[0]
			r.On = append(r.On, model.PVRange{PV: pr.PV, FirstPE: pr.FirstPE + lo - seg.StartLE, LastPE: pr.FirstPE + hi - seg.StartLE})
			if pv := h.PVs[pr.PV]; pv == nil || !pv.Fast() {
				fast = false
			}
		}
		r.Fast = fast && len(r.On) > 0
	}
	return regions
}

// isNotExist reports whether err says a file does not exist.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
