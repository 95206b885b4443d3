package reconcile

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/schema"
	"github.com/keel-storage/keel/schema/units"
	"github.com/keel-storage/keel/schema/vdo"
)

// Audit defaults, from the reference material.
const (
	auditVDOUsedAlert        = 90
	auditMaxDiscardBlocks    = 4096 // 16 MiB
	slabRemainderFractionDen = 10   // remainder above 1/10 of a slab is reported
)

// observedVDO is what the planner reads from one observed pool, settled
// from the live table, the on-disk geometry and LVM's metadata.
type observedVDO struct {
	pool       *probes.VDOPool
	lv         *probes.LV // the VDO LV on top (nil when missing)
	extent     uint64     // VG extent size in bytes
	physical   uint64     // bytes
	slab       uint64     // bytes, 0 when unknown
	indexMiB   uint64     // 0 when unknown
	sparse     bool
	layout     *vdo.Layout // nil when the geometry is unknown
	threads    vdo.Threads
	cacheBlock uint64
}

// observeVDO settles what the planner reads from one pool (cached: the
// layout arithmetic is the planner's largest fixed cost per pool).
func (p *planner) observeVDO(pool *probes.VDOPool, lvName string) observedVDO {
	if lvName == "" && len(pool.VDOLVs) > 0 {
		lvName = strings.TrimPrefix(pool.VDOLVs[0], pool.VG+"/")
	}
	key := pool.LV + "|" + lvName
	if o, ok := p.vdoSeen[key]; ok {
		return o
	}
	o := p.computeObservedVDO(pool, lvName)
	p.vdoSeen[key] = o
	return o
}

func (p *planner) computeObservedVDO(pool *probes.VDOPool, lvName string) observedVDO {
	o := observedVDO{pool: pool, extent: defaultExtentBytes}
	if vg := p.h.VGs[pool.VG]; vg != nil && vg.ExtentSize > 0 {
		o.extent = vg.ExtentSize
	}
	if lvName != "" {
		o.lv = p.h.LVs[pool.VG+"/"+lvName]
	}
	switch {
	case pool.Table != nil:
		o.physical = pool.Table.PhysicalBlocks * vdo.BlockSize
	case p.h.LVs[pool.DataLV] != nil:
		o.physical = p.h.LVs[pool.DataLV].Size
	}
	if d := pool.OnDisk; d != nil {
		o.slab = d.SlabSize * vdo.BlockSize
		o.indexMiB = indexCodeMiB(d.IndexMemory)
		o.sparse = d.SparseIndex
	}
	if o.slab == 0 {
		o.slab = settingUint(pool.Settings, "vdo_slab_size")
	}
	if o.indexMiB == 0 {
		o.indexMiB = settingUint(pool.Settings, "vdo_index_memory_size") >> 20
		o.sparse = settingBool(pool.Settings, "vdo_use_sparse_index")
	}
	if t := pool.Table; t != nil {
		o.threads = vdo.Threads{Logical: t.Logical, Physical: t.Physical, Hash: t.Hash, CPU: t.CPU, Bio: t.Bio, Ack: t.Ack}
		o.cacheBlock = t.BlockMapCacheBlocks
	}
	if o.physical > 0 && o.slab > 0 && o.indexMiB > 0 {
		if m, err := vdo.IndexMemoryFromMiB(o.indexMiB); err == nil {
			if l, err := vdo.NewLayout(vdo.Geometry{PhysicalBytes: o.physical, SlabBytes: o.slab, IndexMemory: m, Sparse: o.sparse}); err == nil {
				o.layout = &l
			}
		}
	}
	return o
}

// indexCodeMiB decodes the geometry block's index memory field: 0xFFFFFF00,
// 0xFFFFFE00 and 0xFFFFFD00 are 0.25, 0.5 and 0.75 GB; small numbers whole GB.
func indexCodeMiB(code uint32) uint64 {
	switch code {
	case 0xFFFFFF00:
		return 256
	case 0xFFFFFE00:
		return 512
	case 0xFFFFFD00:
		return 768
	}
	if code > 0 && code < 0x1000 {
		return uint64(code) * 1024
	}
	return 0
}

func settingUint(m map[string]string, key string) uint64 {
	v, err := strconv.ParseUint(strings.TrimSpace(m[key]), 10, 64)
	if err != nil {
		return 0
	}
	return v
}

func settingBool(m map[string]string, key string) bool {
	v := strings.TrimSpace(m[key])
	return v != "" && v != "0"
}

func threadsText(t vdo.Threads) string {
	return fmt.Sprintf("logical %d, physical %d, hash %d, cpu %d, bio %d, ack %d (%d threads)",
		t.Logical, t.Physical, t.Hash, t.CPU, t.Bio, t.Ack, t.Total())
}

// desiredVDO converts a declared pool into vdo.Pool, with the thread layout
// resolved for this host.
func (p *planner) desiredVDO(vgName, poolName string, want schema.VDOPool, slabs uint64) (vdo.Pool, error) {
	d := vdo.Pool{VG: vgName, Pool: poolName, LV: want.LV,
		PhysicalBytes: want.Size.Bytes, VirtualBytes: want.VirtualSize.Bytes,
		SlabBytes: want.SlabSize.Bytes, IndexMemoryMiB: want.IndexMemory.Bytes >> 20,
		Sparse: want.SparseIndex, BlockMapCacheMiB: want.BlockMapCache.Bytes >> 20,
		MaxDiscardBlocks: want.MaxDiscard.Bytes / vdo.BlockSize,
		Compression:      want.Compression, Deduplication: want.Deduplication}
	if d.PhysicalBytes == 0 || d.VirtualBytes == 0 {
		return d, fmt.Errorf("vdo pool %s/%s: size %q or virtualSize %q unreadable", vgName, poolName, want.Size, want.VirtualSize)
	}
	if want.Threads.Auto {
		if slabs == 0 {
			g, err := d.Geometry()
			if err != nil {
				return d, err
			}
			l, err := vdo.NewLayout(g)
			if err != nil {
				return d, fmt.Errorf("vdo pool %s/%s: %w", vgName, poolName, err)
			}
			slabs = l.Slabs
		}
		cache := d.BlockMapCacheMiB << 20 / vdo.BlockSize
		if cache == 0 {
			cache = vdo.DefaultBlockMapCacheBytes / vdo.BlockSize
		}
		d.Threads = vdo.AutoThreadsCache(p.h.CPUs, slabs, cache)
	} else {
		d.Threads = want.Threads.Threads
	}
	return d, nil
}

// planVDO judges one declared VDO pool.
func (p *planner) planVDO(vgName, poolName string, vgWant schema.VolumeGroup, want schema.VDOPool, phase int) {
	object := vgName + "/" + poolName
	pool := p.h.VDOPools[object]
	if pool == nil {
		p.planMissingVDO(vgName, poolName, vgWant, want, phase)
		return
	}
	o := p.observeVDO(pool, want.LV)
	slabs := uint64(0)
	if o.layout != nil {
		slabs = o.layout.Slabs
	}
	d, err := p.desiredVDO(vgName, poolName, want, slabs)
	if err != nil {
		p.add(Finding{ID: "vdo.missing", Object: object,
			Message: err.Error(),
			Remedy:  "fix the desired state (keel vet)",
		})
		return
	}
	if o.lv == nil {
		p.add(Finding{ID: "vdo.missing", Object: vgName + "/" + want.LV,
			Message:  fmt.Sprintf("VDO pool %s exists but its VDO LV %s/%s does not", object, vgName, want.LV),
			Expected: "VDO LV " + want.LV, Observed: "pool without that LV",
			Remedy: "create the VDO LV by hand (lvcreate --type vdo -V … -n " + want.LV + " " + object + ")",
		})
	}
	p.checkVDOImmutables(object, o, d)
	if t := pool.Table; t != nil {
		p.checkVDOLive(object, t, d)
		p.checkVDOMaintenance(object, o, d)
	}
	if !want.Overcommit {
		p.checkOvercommit(object, o)
	}
	p.checkVDOHealth(object, o, want.UsedPercentAlert)
	if want.Split != nil {
		p.checkSplit(object, o, want.Split.Fast)
	}
}

func (p *planner) planMissingVDO(vgName, poolName string, vgWant schema.VolumeGroup, want schema.VDOPool, phase int) {
	object := vgName + "/" + poolName
	key := p.add(Finding{ID: "vdo.missing", Object: object,
		Message:  fmt.Sprintf("VDO pool %s (VDO LV %s) does not exist", object, want.LV),
		Expected: fmt.Sprintf("VDO pool of %s, VDO LV %s of %s", want.Size, want.LV, want.VirtualSize), Observed: "no such pool",
		Remedy: createRemedy(want.Create, "lvcreate --type vdo with every setting on the creation line"),
	})
	if !want.Create {
		return
	}
	d, err := p.desiredVDO(vgName, poolName, want, 0)
	if err != nil {
		return
	}
	a := Action{ID: "vdo.create:" + object, Kind: KindCommand, Class: Live, Object: object, Remedies: []string{key}}
	if want.Split == nil {
		a.Summary = fmt.Sprintf("create VDO pool %s (%s) and VDO LV %s (%s)", object, want.Size, want.LV, want.VirtualSize)
		a.Commands = [][]string{d.LVCreateArgs()}
		p.act(phaseCreateVDO+phase, a)
		return
	}
	cmds, err := p.splitCreate(vgName, poolName, vgWant, want, d)
	if err != nil {
		p.findings[len(p.findings)-1].Remedy += "; cannot plan the split layout: " + err.Error()
		return
	}
	a.Summary = fmt.Sprintf("create split VDO pool %s: head and tail on %s, slabs on the other PVs, then convert", object, strings.Join(want.Split.Fast, " "))
	a.Commands = cmds
	p.act(phaseCreateVDO+phase, a)
}

// splitCreate lays a split pool out head/middle/tail and converts it.
func (p *planner) splitCreate(vgName, poolName string, vgWant schema.VolumeGroup, want schema.VDOPool, d vdo.Pool) ([][]string, error) {
	extent := uint64(defaultExtentBytes)
	if vg := p.h.VGs[vgName]; vg != nil && vg.ExtentSize > 0 {
		extent = vg.ExtentSize
	}
	g, err := d.Geometry()
	if err != nil {
		return nil, err
	}
	g.PhysicalBytes = g.PhysicalBytes / extent * extent
	l, err := vdo.NewLayout(g)
	if err != nil {
		return nil, err
	}
	sp, err := l.Split(extent)
	if err != nil {
		return nil, err
	}
	fast := map[string]bool{}
	for _, f := range want.Split.Fast {
		fast[f] = true
	}
	var slow []string
	for _, pv := range vgWant.PVs {
		if !fast[pv] {
			slow = append(slow, pv)
		}
	}
	if len(slow) == 0 {
		return nil, fmt.Errorf("VG %s has no PV outside split.fast for the slabs", vgName)
	}
	lvPath := vgName + "/" + poolName
	head := append([]string{"lvcreate", "-y", "-l", strconv.FormatUint(sp.Head.Count, 10), "-n", poolName, vgName}, want.Split.Fast...)
	middle := append([]string{"lvextend", "-y", "-l", "+" + strconv.FormatUint(sp.Middle.Count, 10), lvPath}, slow...)
	tail := append([]string{"lvextend", "-y", "-l", "+" + strconv.FormatUint(sp.Tail.Count, 10), lvPath}, want.Split.Fast...)
	convert := []string{"lvconvert", "-y", "--type", "vdo-pool", "-n", want.LV, "-V", vdo.LVMSize(d.VirtualBytes), lvPath,
		"--vdosettings", d.VDOSettings()}
	return [][]string{head, middle, tail, convert}, nil
}

// checkVDOImmutables reports slab size and index drift: fixed at creation.
func (p *planner) checkVDOImmutables(object string, o observedVDO, d vdo.Pool) {
	if o.slab != 0 && d.SlabBytes != 0 && o.slab != d.SlabBytes {
		key := p.add(Finding{ID: "vdo.slab_size", Object: object,
			Message:  "slab size differs from the declared one; it is fixed at creation",
			Expected: units.FormatSize(d.SlabBytes), Observed: units.FormatSize(o.slab),
			Remedy: "rebuild the pool (keel never retries this)",
		})
		p.reportOnly("vdo.slab_size", object, "slab size is fixed at creation: rebuild the pool to change it", key)
	}
	if o.indexMiB != 0 && (o.indexMiB != d.IndexMemoryMiB || o.sparse != d.Sparse) {
		exp := fmt.Sprintf("index %s, sparse %v", units.FormatSize(uint64(d.IndexMemoryMiB)<<20), d.Sparse)
		obs := fmt.Sprintf("index %s, sparse %v", units.FormatSize(uint64(o.indexMiB)<<20), o.sparse)
		key := p.add(Finding{ID: "vdo.index_memory", Object: object,
			Message:  "UDS index memory or sparse index differs; fixed at creation",
			Expected: exp, Observed: obs,
			Remedy: "rebuild the pool (keel never retries this)",
		})
		p.reportOnly("vdo.index_memory", object, "index memory and sparse index are fixed at creation: rebuild the pool", key)
	}
}

// checkVDOLive compares compression and deduplication: live changes.
func (p *planner) checkVDOLive(object string, t *probes.VDOTable, d vdo.Pool) {
	for _, c := range []struct {
		id, flag   string
		got, want  bool
		actionName string
	}{
		{"vdo.compression", "--compression", t.Compression, d.Compression, "compression"},
		{"vdo.deduplication", "--deduplication", t.Deduplication, d.Deduplication, "deduplication"},
	} {
		if c.got == c.want {
			continue
		}
		key := p.add(Finding{ID: c.id, Object: object,
			Message:  c.actionName + " is " + onOff(c.got) + ", declared " + onOff(c.want),
			Expected: onOff(c.want), Observed: onOff(c.got),
			Remedy: fmt.Sprintf("lvchange %s %s %s", c.flag, yn(c.want), object),
		})
		p.act(phaseChange, Action{ID: c.id + ":" + object, Kind: KindCommand, Class: Live, Object: object,
			Summary:  fmt.Sprintf("turn VDO %s %s on %s", c.actionName, onOff(c.want), object),
			Commands: [][]string{{"lvchange", c.flag, yn(c.want), object}}, Remedies: []string{key}})
	}
}

// checkVDOMaintenance compares the settings that need the pool stopped
// (threads, max_discard, block map cache) and emits one maintenance action
// that deactivates, changes them all and activates again.
func (p *planner) checkVDOMaintenance(object string, o observedVDO, d vdo.Pool) {
	t := o.pool.Table
	var keys, settings []string
	if o.threads != d.Threads {
		keys = append(keys, p.add(Finding{ID: "vdo.threads", Object: object,
			Message:  "the running VDO thread layout is not the declared one",
			Expected: threadsText(d.Threads), Observed: threadsText(o.threads),
			Remedy: "maintenance: lvchange --vdosettings with the pool's VMs stopped",
		}))
		th := d.Threads
		settings = append(settings, fmt.Sprintf("logical_threads=%d physical_threads=%d hash_zone_threads=%d cpu_threads=%d bio_threads=%d ack_threads=%d",
			th.Logical, th.Physical, th.Hash, th.CPU, th.Bio, th.Ack))
	}
	if d.MaxDiscardBlocks != 0 && t.MaxDiscard != d.MaxDiscardBlocks {
		keys = append(keys, p.add(Finding{ID: "vdo.max_discard", Object: object,
			Message:  "max_discard is not the declared value",
			Expected: discardText(d.MaxDiscardBlocks), Observed: discardText(t.MaxDiscard),
			Remedy: "maintenance: lvchange --vdosettings max_discard",
		}))
		settings = append(settings, fmt.Sprintf("max_discard=%d", d.MaxDiscardBlocks))
	}
	if want := d.BlockMapCacheMiB << 20 / vdo.BlockSize; want != 0 && t.BlockMapCacheBlocks != want {
		keys = append(keys, p.add(Finding{ID: "vdo.block_map_cache", Object: object,
			Message:  "the block map cache is not the declared size",
			Expected: units.FormatSize(want * vdo.BlockSize), Observed: units.FormatSize(t.BlockMapCacheBlocks * vdo.BlockSize),
			Remedy: "maintenance: lvchange --vdosettings block_map_cache_size_mb",
		}))
		settings = append(settings, fmt.Sprintf("block_map_cache_size_mb=%d", d.BlockMapCacheMiB))
	}
	if len(keys) == 0 {
		return
	}
	lvName := ""
	if o.lv != nil {
		lvName = o.lv.FullName
	}
	p.act(phaseChange, Action{ID: "vdo.vdosettings:" + object, Kind: KindCommand, Class: Maintenance, Object: object,
		Summary:  fmt.Sprintf("stop %s, change %s, start it again (needs its VMs stopped)", object, strings.Join(settings, " ")),
		Commands: p.framedVDOSettings(object, lvName, strings.Join(settings, " ")), Remedies: keys})
}

func discardText(blocks uint64) string {
	return fmt.Sprintf("%d blocks (%s)", blocks, units.FormatSize(blocks*vdo.BlockSize))
}

// framedVDOSettings deactivates every VG stacked on the VDO LV and the VDO
// LV itself, changes the settings, and activates them again.
func (p *planner) framedVDOSettings(pool, vdoLV, settings string) [][]string {
	var uppers []string
	for vg, lowers := range p.stackedVGs() {
		for _, l := range lowers {
			if l == vdoLV {
				uppers = append(uppers, vg)
			}
		}
	}
	sort.Strings(uppers)
	var cmds [][]string
	for _, vg := range uppers {
		cmds = append(cmds, []string{"vgchange", "-an", vg})
	}
	target := pool
	if vdoLV != "" {
		target = vdoLV
	}
	cmds = append(cmds, []string{"lvchange", "-an", target},
		[]string{"lvchange", "--vdosettings", settings, pool},
		[]string{"lvchange", "-ay", target})
	for _, vg := range uppers {
		cmds = append(cmds, []string{"vgchange", "-ay", vg})
	}
	return cmds
}

// checkOvercommit reports a VDO LV larger than the pool can address.
func (p *planner) checkOvercommit(object string, o observedVDO) {
	if o.layout == nil || o.lv == nil {
		return
	}
	limit := o.layout.MaxThickVirtualBytes(o.extent)
	if o.lv.Size <= limit {
		return
	}
	key := p.add(Finding{ID: "vdo.overcommit", Object: o.lv.FullName,
		Message: fmt.Sprintf("VDO LV %s is %s but pool %s can address at most %s thick: VDO can fill before the VG above does",
			o.lv.FullName, units.FormatSize(o.lv.Size), object, units.FormatSize(limit)),
		Expected: "at most " + units.FormatSize(limit), Observed: units.FormatSize(o.lv.Size),
		Remedy: "a VDO LV never shrinks: rebuild at a thick size, or declare overcommit: true",
	})
	p.reportOnly("vdo.overcommit", o.lv.FullName, "a VDO LV cannot shrink: rebuild it at a thick size", key)
}

// checkVDOHealth covers mode, index, usage, dedupe timeouts and the slab
// remainder, in both modes.
func (p *planner) checkVDOHealth(object string, o observedVDO, alert float64) {
	pool := o.pool
	if st := pool.Status; st != nil {
		if st.Mode != "normal" {
			p.add(Finding{ID: "vdo.mode", Object: object,
				Message:  "VDO pool is in " + st.Mode + " mode",
				Expected: "normal", Observed: st.Mode,
				Remedy: "check dmesg and vdostats --verbose; read-only needs an offline rebuild of the reference counts",
			})
		}
		if pool.Table != nil && pool.Table.Deduplication && st.IndexState != "online" {
			p.add(Finding{ID: "vdo.index", Object: object,
				Message:  "deduplication is on but the UDS index is " + st.IndexState,
				Expected: "online", Observed: st.IndexState,
				Remedy: fmt.Sprintf("dmsetup message %s 0 index-enable; check dmesg", pool.DMName),
			})
		}
		used := st.UsedPercent()
		p.level("vdo_used", object, used, alert)
		if used >= 0 && used >= alert {
			p.add(Finding{ID: "vdo.usage", Object: object,
				Message:  fmt.Sprintf("VDO pool is %s used, alert at %s", pct(used), pct(alert)),
				Expected: "below " + pct(alert), Observed: pct(used),
				Remedy: "discard unused blocks above (fstrim, on-volume-remove discard=1) or grow the pool",
			})
		}
	}
	if s := pool.Stats; s != nil && s.DedupeAdviceTimeouts > 0 {
		p.add(Finding{ID: "vdo.dedupe_timeouts", Object: object,
			Message:  fmt.Sprintf("%d dedupe advice timeouts: the index answered too late and duplicates were written", s.DedupeAdviceTimeouts),
			Expected: "0", Observed: strconv.FormatUint(s.DedupeAdviceTimeouts, 10),
			Remedy: "put the index on faster storage (split pool) or reduce load",
		})
	}
	if l := o.layout; l != nil && l.Unused.Count*slabRemainderFractionDen > l.Slab.Blocks {
		p.add(Finding{ID: "vdo.slab_remainder", Object: object,
			Message:  fmt.Sprintf("%d blocks (%s) between the last slab and the journal are never used", l.Unused.Count, units.FormatSize(l.Unused.Count*vdo.BlockSize)),
			Expected: "under a tenth of a slab", Observed: units.FormatSize(l.Unused.Count * vdo.BlockSize),
			Remedy: fmt.Sprintf("grow the pool by %s to fit another slab, or size pools in whole slabs plus overhead",
				units.FormatSize((l.NextSlabBlocks()-l.PhysicalBlocks)*vdo.BlockSize)),
		})
	}
}

// auditVDO judges an observed pool against the reference rules.
func (p *planner) auditVDO(pool *probes.VDOPool) {
	object := pool.LV
	o := p.observeVDO(pool, "")
	if t := pool.Table; t != nil {
		slabs := uint64(1)
		if o.layout != nil {
			slabs = o.layout.Slabs
		}
		want := vdo.AutoThreadsCache(p.h.CPUs, slabs, t.BlockMapCacheBlocks)
		if o.threads != want {
			p.add(Finding{ID: "vdo.threads", Object: object,
				Message:  fmt.Sprintf("thread layout is not one thread per CPU (%d CPUs)", p.h.CPUs),
				Expected: threadsText(want), Observed: threadsText(o.threads),
				Remedy: "maintenance: lvchange --vdosettings with the pool's VMs stopped",
			})
		}
		if t.MaxDiscard == 1 {
			p.add(Finding{ID: "vdo.max_discard", Object: object,
				Message:  "max_discard is LVM's default of one 4 KiB block: discards burn a core",
				Expected: discardText(auditMaxDiscardBlocks), Observed: discardText(t.MaxDiscard),
				Remedy: "maintenance: lvchange --vdosettings max_discard=4096",
			})
		}
	}
	p.checkOvercommit(object, o)
	p.checkVDOHealth(object, o, auditVDOUsedAlert)
}

// planVDOMemory adds up LVM's RAM bill for every VDO pool (observed, and
// declared ones still to create) and compares it with the host's memory.
func (p *planner) planVDOMemory() {
	if p.h.Memory.TotalBytes == 0 {
		return
	}
	var total uint64
	var parts []string
	for _, key := range slices.Sorted(maps.Keys(p.h.VDOPools)) {
		o := p.observeVDO(p.h.VDOPools[key], "")
		virt := uint64(0)
		if o.lv != nil {
			virt = o.lv.Size
		}
		cache := uint64(vdo.DefaultBlockMapCacheBytes >> 20)
		if o.cacheBlock > 0 {
			cache = o.cacheBlock * vdo.BlockSize >> 20
		}
		bill := vdo.RAMBill(o.physical, virt, cache, max(o.indexMiB, 256)).TotalMiB()
		total += bill
		parts = append(parts, fmt.Sprintf("%s %s", key, units.FormatSize(uint64(bill)<<20)))
	}
	if !p.audit {
		for _, vg := range slices.Sorted(maps.Keys(p.d.VolumeGroups)) {
			for _, name := range slices.Sorted(maps.Keys(p.d.VolumeGroups[vg].VDOPools)) {
				if p.h.VDOPools[vg+"/"+name] != nil {
					continue
				}
				d, err := p.desiredVDO(vg, name, p.d.VolumeGroups[vg].VDOPools[name], 0)
				if err != nil {
					continue
				}
				bill := vdo.RAMBill(d.PhysicalBytes, d.VirtualBytes, max(d.BlockMapCacheMiB, 128), max(d.IndexMemoryMiB, 256)).TotalMiB()
				total += bill
				parts = append(parts, fmt.Sprintf("%s/%s %s (to create)", vg, name, units.FormatSize(uint64(bill)<<20)))
			}
		}
	}
	if total<<20 <= p.h.Memory.TotalBytes {
		return
	}
	p.add(Finding{ID: "vdo.memory", Object: "host",
		Message: fmt.Sprintf("VDO pools need %s of RAM (%s), more than the host's %s", units.FormatSize(uint64(total)<<20),
			strings.Join(parts, ", "), units.FormatSize(p.h.Memory.TotalBytes>>20<<20)),
		Expected: "at most " + units.FormatSize(p.h.Memory.TotalBytes>>20<<20), Observed: units.FormatSize(uint64(total) << 20),
		Remedy: "smaller index or block map cache, fewer pools, or more RAM",
	})
}
