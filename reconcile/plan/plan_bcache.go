package plan

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/schema/spec"
)

// bcache defaults the kernel restores at every registration.
const (
	bcacheDefaultCutoff           = 4 << 20
	bcacheDefaultWritebackPercent = 10
)

func bcacheObject(uuid string) string { return "bcache:" + uuid }

// findBcache resolves a declared backing device: a bcache backing UUID,
// a /dev/disk/by-id path of the backing device, or /dev/<kernel name>.
func (p *planner) findBcache(backing string) *model.Bcache {
	if b := p.h.Bcache[backing]; b != nil {
		return b
	}
	if id, ok := strings.CutPrefix(backing, "/dev/disk/by-id/"); ok {
		for _, uuid := range slices.Sorted(maps.Keys(p.h.Bcache)) {
			if b := p.h.Bcache[uuid]; slices.Contains(b.BackingByID, id) {
				return b
			}
		}
	}
	name := strings.TrimPrefix(backing, "/dev/")
	if pv := p.resolvePV(backing); pv != "" && p.h.PVs[pv] != nil {
		name = p.h.PVs[pv].Device
	}
	for _, uuid := range slices.Sorted(maps.Keys(p.h.Bcache)) {
		if b := p.h.Bcache[uuid]; b.Backing == name {
			return b
		}
	}
	return nil
}

// tunableCheck is one per-device tunable: how to read it, how to write it.
type tunableCheck struct {
	file     string
	path     string // sysfs path to write
	want     uint64
	got      string // as read back
	wantRead string // what it reads as when right
}

// planBcache judges one declared bcache backing device.
func (p *planner) planBcache(name string, want spec.Bcache) {
	b := p.findBcache(want.Backing)
	if b == nil {
		p.add(Finding{ID: BcacheMissing, Object: "bcache:" + name,
			Message:  fmt.Sprintf("no registered bcache device has backing device %s", want.Backing),
			Expected: "registered", Observed: "not found",
			Remedy: "register it (echo the device path > /sys/fs/bcache/register) or create it with make-bcache",
		})
		return
	}
	object := bcacheObject(b.UUID)
	p.checkBcacheState(object, b, want.CacheSet != "")
	dir := "/sys/block/" + b.Device + "/bcache/"
	if want.CacheMode != "" && b.CacheMode != want.CacheMode {
		key := p.add(Finding{ID: BcacheCacheMode, Object: object,
			Message:  fmt.Sprintf("cache mode of %s (%s) is %s, declared %s", name, b.Device, b.CacheMode, want.CacheMode),
			Expected: want.CacheMode, Observed: b.CacheMode,
			Remedy: "echo " + want.CacheMode + " > " + dir + "cache_mode",
		})
		p.act(phaseChange, Action{ID: "bcache.cache_mode:" + object, Kind: KindSysfs, Class: Live, Object: object,
			Summary: fmt.Sprintf("set cache_mode %s on %s (%s)", want.CacheMode, name, b.Device),
			Writes:  []SysfsWrite{{Path: dir + "cache_mode", Value: want.CacheMode}}, Remedies: []string{key}})
	}
	var checks []tunableCheck
	add := func(file, path string, want *int64, got, wantRead string) {
		if want != nil && got != wantRead {
			checks = append(checks, tunableCheck{file: file, path: path, want: uint64(*want), got: got, wantRead: wantRead})
		}
	}
	if v := want.SequentialCutoff; v != nil {
		add("sequential_cutoff", dir+"sequential_cutoff", v, b.Tunables["sequential_cutoff"], model.Hprint(*v))
	}
	if v := want.WritebackPercent; v != nil {
		add("writeback_percent", dir+"writeback_percent", v, strconv.Itoa(b.WritebackPercent), strconv.FormatInt(*v, 10))
	}
	// With writeback_percent above 0 the kernel's rate controller moves
	// writeback_rate itself, so a different reading is not drift.
	if v := want.WritebackRate; v != nil && b.WritebackPercent == 0 {
		add("writeback_rate", dir+"writeback_rate", v, b.Tunables["writeback_rate"], model.Hprint(*v*512))
	}
	if v := want.WritebackRateMinimum; v != nil {
		add("writeback_rate_minimum", dir+"writeback_rate_minimum", v, strconv.FormatUint(b.WritebackRateMinimum, 10), strconv.FormatInt(*v, 10))
	}
	if cs := p.h.CacheSets[b.CacheSet]; cs != nil {
		setDir := "/sys/fs/bcache/" + cs.UUID + "/"
		add("congested_read_threshold_us", setDir+"congested_read_threshold_us", want.CongestedReadThresholdUs,
			strconv.FormatUint(cs.CongestedReadThresholdUS, 10), decimal(want.CongestedReadThresholdUs))
		add("congested_write_threshold_us", setDir+"congested_write_threshold_us", want.CongestedWriteThresholdUs,
			strconv.FormatUint(cs.CongestedWriteThresholdUS, 10), decimal(want.CongestedWriteThresholdUs))
	}
	if len(checks) == 0 {
		return
	}
	var keys []string
	var writes []SysfsWrite
	var exp, obs, files []string
	for _, c := range checks {
		files = append(files, c.file)
		exp = append(exp, c.file+"="+c.wantRead)
		obs = append(obs, c.file+"="+c.got)
		writes = append(writes, SysfsWrite{Path: c.path, Value: strconv.FormatUint(c.want, 10)})
	}
	keys = append(keys, p.add(Finding{ID: BcacheTunable, Object: object,
		Message:  fmt.Sprintf("%s (%s): %s not as declared (the kernel resets them at every registration)", name, b.Device, strings.Join(files, ", ")),
		Expected: strings.Join(exp, " "), Observed: strings.Join(obs, " "),
		Remedy: "write the declared values (plain decimals) to sysfs",
	}))
	p.act(phaseChange, Action{ID: "bcache.tunable:" + object, Kind: KindSysfs, Class: Live, Object: object,
		Summary: fmt.Sprintf("write %d bcache tunables of %s (%s)", len(writes), name, b.Device), Writes: writes, Remedies: keys})
}

func decimal(v *int64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatInt(*v, 10)
}

// checkBcacheState reports an inconsistent device, or one without its
// cache when a cache set is expected.
func (p *planner) checkBcacheState(object string, b *model.Bcache, wantCache bool) {
	switch {
	case b.State == "inconsistent":
		p.add(Finding{ID: BcacheState, Object: object,
			Message:  fmt.Sprintf("%s reports state inconsistent", b.Device),
			Expected: "clean or dirty", Observed: b.State,
			Remedy: "check the cache device and dmesg before writing more",
		})
	case wantCache && (b.State == "no cache" || b.CacheSet == ""):
		p.add(Finding{ID: BcacheState, Object: object,
			Message:  fmt.Sprintf("%s runs without its cache set", b.Device),
			Expected: "attached", Observed: b.State,
			Remedy: fmt.Sprintf("echo <cache-set-uuid> > /sys/block/%s/bcache/attach", b.Device),
		})
	}
}

// auditBcache flags the defaults the kernel restores at registration.
func (p *planner) auditBcache(b *model.Bcache) {
	object := bcacheObject(b.UUID)
	p.checkBcacheState(object, b, false)
	var found []string
	if b.SequentialCutoff == bcacheDefaultCutoff {
		found = append(found, "sequential_cutoff="+b.Tunables["sequential_cutoff"])
	}
	if b.WritebackPercent == bcacheDefaultWritebackPercent {
		found = append(found, "writeback_percent=10")
	}
	if cs := p.h.CacheSets[b.CacheSet]; cs != nil {
		if cs.CongestedReadThresholdUS != 0 {
			found = append(found, fmt.Sprintf("congested_read_threshold_us=%d", cs.CongestedReadThresholdUS))
		}
		if cs.CongestedWriteThresholdUS != 0 {
			found = append(found, fmt.Sprintf("congested_write_threshold_us=%d", cs.CongestedWriteThresholdUS))
		}
	}
	if len(found) == 0 {
		return
	}
	p.add(Finding{ID: BcacheTunable, Object: object,
		Message:  fmt.Sprintf("%s still has the kernel's defaults, restored at every registration", b.Device),
		Expected: "sequential_cutoff=0 writeback_percent=40 congested thresholds 0 (or as declared)", Observed: strings.Join(found, " "),
		Remedy: "declare the tunables in the desired state so keel re-applies them",
	})
}
