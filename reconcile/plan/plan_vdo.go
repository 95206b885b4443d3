package plan

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/keel-storage/keel/lvm/units"
	"github.com/keel-storage/keel/lvm/vdo"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/probes/shell"
	"github.com/keel-storage/keel/schema/spec"
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
	pool       *model.VDOPool
	lv         *model.LV // the VDO LV on top (nil when missing)
	extent     uint64    // VG extent size in bytes
	physical   uint64    // bytes
	slab       uint64    // bytes, 0 when unknown
	indexMiB   uint64    // 0 when unknown
	sparse     bool
	layout     *vdo.Layout // nil when the geometry is unknown
	threads    vdo.Threads
	cacheBlock uint64
}

// observeVDO settles what the planner reads from one pool (cached: the
// layout arithmetic is the planner's largest fixed cost per pool).
func (p *planner) observeVDO(pool *model.VDOPool, lvName string) observedVDO {
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

func (p *planner) computeObservedVDO(pool *model.VDOPool, lvName string) observedVDO {
	o := observedVDO{pool: pool, extent: p.vgExtent(pool.VG)}
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
	} else {
		// An inactive pool has no table: LVM's setting is the cache the
		// kernel allocates when the pool is activated (lvchange
		// --vdosettings changes it while the pool is down, and LVM checks
		// no memory then).
		o.cacheBlock = settingUint(pool.Settings, "vdo_block_map_cache_size") / vdo.BlockSize
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
func (p *planner) desiredVDO(vgName, poolName string, want spec.VDOPool, slabs uint64) (vdo.Pool, error) {
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
func (p *planner) planVDO(vgName, poolName string, vgWant spec.VolumeGroup, want spec.VDOPool, phase int) {
	object := vgName + "/" + poolName
	pool := p.h.VDOPools[object]
	if pool == nil {
		p.planMissingVDO(vgName, poolName, vgWant, want, phase)
		return
	}
	o := p.observeVDO(pool, want.LV)
	p.finishVDOCreate(object, o, phase)
	slabs := uint64(0)
	if o.layout != nil {
		slabs = o.layout.Slabs
	}
	d, err := p.desiredVDO(vgName, poolName, want, slabs)
	if err != nil {
		p.add(Finding{ID: VDOMissing, Object: object,
			Message: err.Error(),
			Remedy:  "fix the desired state (keel vet)",
		})
		return
	}
	if o.lv == nil {
		p.add(Finding{ID: VDOMissing, Object: vgName + "/" + want.LV,
			Message:  fmt.Sprintf("VDO pool %s exists but its VDO LV %s/%s does not", object, vgName, want.LV),
			Expected: "VDO LV " + want.LV, Observed: "pool without that LV",
			Remedy: "create the VDO LV by hand (lvcreate --type vdo -V … -n " + want.LV + " " + object + ")",
		})
	}
	p.checkVDOImmutables(object, o, d)
	p.planVDOSize(object, o, d, vgWant, want)
	if poolLV := p.h.LVs[object]; poolLV != nil {
		var minStep uint64
		if o.slab > 0 {
			minStep = vdo.MinGrowBytes(o.slab, o.extent)
		}
		p.planAutoextend(vdoAutoextend, autoextendPool{object: object, size: poolLV.Size, minStep: minStep,
			active: pool.Table != nil, monitor: pool.Monitor, profile: pool.Profile}, want.Autoextend)
	}
	if t := pool.Table; t != nil {
		p.checkVDOLive(object, t, d)
		p.checkVDOMaintenance(object, o, d)
	}
	if !want.Overcommit {
		p.checkOvercommit(object, o, &want)
	}
	p.checkVDOHealth(object, o, want.UsedPercentAlert)
	if want.Split != nil {
		p.checkSplit(object, o, want.Split.Fast)
	}
}

func (p *planner) planMissingVDO(vgName, poolName string, vgWant spec.VolumeGroup, want spec.VDOPool, phase int) {
	object := vgName + "/" + poolName
	f := Finding{ID: VDOMissing, Object: object,
		Message:  fmt.Sprintf("VDO pool %s (VDO LV %s) does not exist", object, want.LV),
		Expected: fmt.Sprintf("VDO pool of %s, VDO LV %s of %s", want.Size, want.LV, want.VirtualSize), Observed: "no such pool",
		Remedy: createRemedy(want.Create, "lvcreate --type vdo with every setting on the creation line"),
	}
	lv := p.h.LVs[object]
	switch {
	case lv != nil && lv.SegType == "vdo-pool":
		lv = nil // judged elsewhere; not a creation to finish
	case hasTag(lv, CreateTag):
		f.Message = fmt.Sprintf("the creation of VDO pool %s (VDO LV %s) stopped before it ended: %s is still the plain LV keel made for it", object, want.LV, object)
		f.Observed = fmt.Sprintf("%s LV of %s with tag %s", lv.SegType, units.FormatSize(lv.Size), CreateTag)
	case lv != nil:
		// Someone else's LV under the pool's name: never converted (that
		// formats it), and an lvcreate would only fail.
		f.Observed = fmt.Sprintf("%s is a %s LV of %s, not a VDO pool", object, lv.SegType, units.FormatSize(lv.Size))
		f.Remedy = fmt.Sprintf("declare the pool under another name: the LV %s is not keel's and keel never converts it (lvconvert would format it)", object)
		p.add(f)
		return
	}
	key := p.add(f)
	if !want.Create {
		return
	}
	d, err := p.desiredVDO(vgName, poolName, want, 0)
	if err != nil {
		return
	}
	a := Action{ID: "vdo.create:" + object, Kind: KindCommand, Class: Live, Object: object, Remedies: []string{key}}
	var steps []createStep
	if want.Split == nil {
		a.Summary = fmt.Sprintf("create VDO pool %s (%s) and VDO LV %s (%s)", object, want.Size, want.LV, want.VirtualSize)
		steps = []createStep{{argv: append(d.LVCreateArgs(), "--addtag", CreateTag)}}
	} else {
		var err error
		if steps, err = p.splitCreate(vgName, poolName, vgWant, want, d); err != nil {
			p.findings[len(p.findings)-1].Remedy += "; cannot plan the split layout: " + err.Error()
			return
		}
		a.Summary = fmt.Sprintf("create split VDO pool %s: head and tail on %s, slabs on the other PVs, then convert", object, strings.Join(want.Split.Fast, " "))
	}
	if lv != nil {
		// The LV keel made for the pool, left by a creation that stopped
		// (keel killed in its middle): go on from the step it reached.
		rest, ok := p.remainingSteps(lv, steps, d)
		if !ok {
			p.findings[len(p.findings)-1].Remedy = fmt.Sprintf("%s is the LV of a creation keel began (tag %s) but its size matches no step of the plan; remove it (lvremove %s) and keel creates the pool again", object, CreateTag, object)
			return
		}
		a.Summary = fmt.Sprintf("finish the interrupted creation of VDO pool %s: %d of %d steps left", object, len(rest), len(steps)+1)
		steps = rest
	}
	for _, s := range steps {
		a.Commands = append(a.Commands, s.argv)
	}
	a.Commands = append(a.Commands, []string{"lvchange", "--deltag", CreateTag, object})
	p.act(phaseCreateVDO+phase, a)
}

// finishVDOCreate ends the creation of a VDO pool that lvm2 made whole but
// keel did not see through: the pool still carries CreateTag. lvconvert
// --type vdo-pool formats the LV, then commits the pool and its VDO LV in
// one lv_create_single and only then activates them (convert_vdo_lv,
// lib/metadata/vdo_manip.c; _lv_create_an_lv, lib/metadata/lv_manip.c).
// Killed after that commit, it leaves a whole pool with the VDO LV
// inactive, and part of its stack up when the kill came during the
// activation (e2e/kill, kind vdo-partial: most often _vdata active under a
// -vpool device that has only an inactive table, dm-vdo's load cut short).
// keel takes that part down (stackDownCmds), activates the VDO LV it began
// and drops the tag. A VDO LV keel did not begin that is inactive is only
// reported (vg.inactive).
func (p *planner) finishVDOCreate(object string, o observedVDO, phase int) {
	if !hasTag(p.h.LVs[object], CreateTag) {
		return
	}
	var cmds [][]string
	state := "active"
	switch {
	case o.lv == nil:
		state = "missing" // not a state lvm2's one commit leaves; vdo.missing says it
	case !o.lv.Active:
		state = "inactive"
		if down := p.stackDownCmds(o.lv.FullName); len(down) > 0 {
			state += ", its pool's stack partly up"
			cmds = append(cmds, down...)
		}
		cmds = append(cmds, []string{"lvchange", "-ay", o.lv.FullName})
	}
	cmds = append(cmds, []string{"lvchange", "--deltag", CreateTag, object})
	lvName := "(none)"
	if o.lv != nil {
		lvName = o.lv.FullName
	}
	key := p.add(Finding{ID: VDOCreateInterrupted, Object: object,
		Message:  fmt.Sprintf("the creation of VDO pool %s stopped after lvm2 made the pool (VDO LV %s %s, pool still tagged %s)", object, lvName, state, CreateTag),
		Expected: "an active VDO LV, the pool without tag " + CreateTag, Observed: "VDO LV " + state + ", pool with tag " + CreateTag,
		Remedy: shellAnd(cmds),
	})
	p.act(phaseCreateVDO+phase, Action{ID: "vdo.create:" + object, Kind: KindCommand, Class: Live, Object: object,
		Summary:  "finish the interrupted creation of VDO pool " + object,
		Commands: cmds, Remedies: []string{key}})
}

// CreateTag is the LVM tag keel gives the LV of a VDO or thin pool it
// creates, from the first command until the pool is whole (the last command
// deletes it; for thin pools see planMissingThin).
// lvm2 commits the plain LV before vdoformat runs (lvcreate --type vdo, in
// lib/metadata/lv_manip.c, and each step of a split pool), so a keel killed
// in between leaves a plain LV under the pool's name; the tag tells that LV,
// which holds nothing yet, from an LV someone else made under that name.
const CreateTag = "keel_create"

// createStep is one command of a pool's creation and the size of the LV
// after it, in extents (0 for the last, which converts).
type createStep struct {
	argv    []string
	extents uint64
}

// remainingSteps returns the steps after the one that left lv as it is, or
// false when lv's size matches none. A plain pool has one step that makes
// the LV and converts it; after a stop the conversion is left.
func (p *planner) remainingSteps(lv *model.LV, steps []createStep, d vdo.Pool) ([]createStep, bool) {
	extent := p.vgExtent(lv.VG)
	have := lv.Size / extent
	if len(steps) == 1 {
		// lvcreate --type vdo: the LV of the pool's size, then lvconvert.
		if have != roundUpExtent(d.PhysicalBytes, extent)/extent {
			return nil, false
		}
		return []createStep{{argv: d.ConvertArgs()}}, true
	}
	for i, s := range steps {
		if s.extents != 0 && s.extents == have {
			return steps[i+1:], true
		}
	}
	return nil, false
}

// hasTag reports whether LVM lists tag among lv's tags.
func hasTag(lv *model.LV, tag string) bool {
	return lv != nil && slices.Contains(strings.Split(lv.Fields.Get("lv_tags"), ","), tag)
}

// splitCreate lays a split pool out head/middle/tail and converts it; the
// head carries CreateTag.
func (p *planner) splitCreate(vgName, poolName string, vgWant spec.VolumeGroup, want spec.VDOPool, d vdo.Pool) ([]createStep, error) {
	extent := p.vgExtent(vgName)
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
	head := append([]string{"lvcreate", "-y", "-l", strconv.FormatUint(sp.Head.Count, 10), "-n", poolName, "--addtag", CreateTag, vgName}, want.Split.Fast...)
	middle := append([]string{"lvextend", "-y", "-l", "+" + strconv.FormatUint(sp.Middle.Count, 10), lvPath}, slow...)
	tail := append([]string{"lvextend", "-y", "-l", "+" + strconv.FormatUint(sp.Tail.Count, 10), lvPath}, want.Split.Fast...)
	convert := []string{"lvconvert", "-y", "--type", "vdo-pool", "-n", want.LV, "-V", vdo.LVMSize(d.VirtualBytes), lvPath,
		"--vdosettings", d.VDOSettings()}
	return []createStep{
		{head, sp.Head.Count},
		{middle, sp.Head.Count + sp.Middle.Count},
		{tail, sp.Head.Count + sp.Middle.Count + sp.Tail.Count},
		{argv: convert},
	}, nil
}

// checkVDOImmutables reports slab size and index drift: fixed at creation.
func (p *planner) checkVDOImmutables(object string, o observedVDO, d vdo.Pool) {
	if o.slab != 0 && d.SlabBytes != 0 && o.slab != d.SlabBytes {
		key := p.add(Finding{ID: VDOSlabSize, Object: object,
			Message:  "slab size differs from the declared one; it is fixed at creation",
			Expected: units.FormatSize(d.SlabBytes), Observed: units.FormatSize(o.slab),
			Remedy: "rebuild the pool (keel never retries this)",
		})
		p.reportOnly(VDOSlabSize, object, "slab size is fixed at creation: rebuild the pool to change it", key)
	}
	if o.indexMiB != 0 && (o.indexMiB != d.IndexMemoryMiB || o.sparse != d.Sparse) {
		exp := fmt.Sprintf("index %s, sparse %v", units.FormatSize(uint64(d.IndexMemoryMiB)<<20), d.Sparse)
		obs := fmt.Sprintf("index %s, sparse %v", units.FormatSize(uint64(o.indexMiB)<<20), o.sparse)
		key := p.add(Finding{ID: VDOIndexMemory, Object: object,
			Message:  "UDS index memory or sparse index differs; fixed at creation",
			Expected: exp, Observed: obs,
			Remedy: "rebuild the pool (keel never retries this)",
		})
		p.reportOnly(VDOIndexMemory, object, "index memory and sparse index are fixed at creation: rebuild the pool", key)
	}
}

// checkVDOLive compares compression and deduplication: live changes.
func (p *planner) checkVDOLive(object string, t *model.VDOTable, d vdo.Pool) {
	for _, c := range []struct {
		id         FindingID
		flag       string
		got, want  bool
		actionName string
	}{
		{VDOCompression, "--compression", t.Compression, d.Compression, "compression"},
		{VDODeduplication, "--deduplication", t.Deduplication, d.Deduplication, "deduplication"},
	} {
		if c.got == c.want {
			continue
		}
		key := p.add(Finding{ID: c.id, Object: object,
			Message:  c.actionName + " is " + onOff(c.got) + ", declared " + onOff(c.want),
			Expected: onOff(c.want), Observed: onOff(c.got),
			Remedy: fmt.Sprintf("lvchange %s %s %s", c.flag, yn(c.want), object),
		})
		p.act(phaseChange, Action{ID: string(c.id) + ":" + object, Kind: KindCommand, Class: Live, Object: object,
			Summary:  fmt.Sprintf("turn VDO %s %s on %s", c.actionName, onOff(c.want), object),
			Commands: [][]string{{"lvchange", c.flag, yn(c.want), object}}, Remedies: []string{key}})
	}
}

// checkVDOMaintenance compares the settings that need the pool stopped
// (threads, max_discard, block map cache) and emits one maintenance action
// that deactivates, changes them all and activates again. LVM refuses these
// settings on an active pool ("Cannot change VDO settings for active VDO
// pool", tools/lvchange.c _lvchange_vdo; they are VDO_CHANGE_OFFLINE in
// tools/toollib.c get_vdo_settings), so each finding's remedy is the whole
// stop, change, start sequence for its own setting.
func (p *planner) checkVDOMaintenance(object string, o observedVDO, d vdo.Pool) {
	t := o.pool.Table
	lvName := ""
	if o.lv != nil {
		lvName = o.lv.FullName
	}
	var keys, settings []string
	if o.threads != d.Threads {
		set := threadSettings(d.Threads)
		keys = append(keys, p.add(Finding{ID: VDOThreads, Object: object,
			Message:  "the running VDO thread layout is not the declared one; it changes only with the pool stopped (its VMs stopped)",
			Expected: threadsText(d.Threads), Observed: threadsText(o.threads),
			Remedy: p.vdoSettingsRemedy(object, lvName, set),
		}))
		settings = append(settings, set)
	}
	if d.MaxDiscardBlocks != 0 && t.MaxDiscard != d.MaxDiscardBlocks {
		set := fmt.Sprintf("max_discard=%d", d.MaxDiscardBlocks)
		keys = append(keys, p.add(Finding{ID: VDOMaxDiscard, Object: object,
			Message:  "max_discard is not the declared value; it changes only with the pool stopped (its VMs stopped)",
			Expected: discardText(d.MaxDiscardBlocks), Observed: discardText(t.MaxDiscard),
			Remedy: p.vdoSettingsRemedy(object, lvName, set),
		}))
		settings = append(settings, set)
	}
	if want := d.BlockMapCacheMiB << 20 / vdo.BlockSize; want != 0 && t.BlockMapCacheBlocks != want {
		set := fmt.Sprintf("block_map_cache_size_mb=%d", d.BlockMapCacheMiB)
		keys = append(keys, p.add(Finding{ID: VDOBlockMapCache, Object: object,
			Message:  "the block map cache is not the declared size; it changes only with the pool stopped (its VMs stopped)",
			Expected: units.FormatSize(want * vdo.BlockSize), Observed: units.FormatSize(t.BlockMapCacheBlocks * vdo.BlockSize),
			Remedy: p.vdoSettingsRemedy(object, lvName, set),
		}))
		settings = append(settings, set)
	}
	if len(keys) == 0 {
		return
	}
	p.act(phaseChange, Action{ID: "vdo.vdosettings:" + object, Kind: KindCommand, Class: Maintenance, Object: object,
		Summary:  fmt.Sprintf("stop %s, change %s, start it again (needs its VMs stopped)", object, strings.Join(settings, " ")),
		Commands: p.framedVDOSettings(object, lvName, strings.Join(settings, " ")), Remedies: keys})
}

// threadSettings is the --vdosettings text of a thread layout.
func threadSettings(th vdo.Threads) string {
	return fmt.Sprintf("logical_threads=%d physical_threads=%d hash_zone_threads=%d cpu_threads=%d bio_threads=%d ack_threads=%d",
		th.Logical, th.Physical, th.Hash, th.CPU, th.Bio, th.Ack)
}

// vdoSettingsRemedy is framedVDOSettings as one line to type: each command
// runs only when the one before succeeded, so a VG above that cannot be
// deactivated (a VM still running) stops the sequence before anything
// changed.
func (p *planner) vdoSettingsRemedy(pool, vdoLV, settings string) string {
	return shellAnd(p.framedVDOSettings(pool, vdoLV, settings))
}

// shellAnd renders commands as one shell line joined by "&&".
func shellAnd(cmds [][]string) string {
	out := make([]string, len(cmds))
	for i, c := range cmds {
		out[i] = shell.Join(c)
	}
	return strings.Join(out, " && ")
}

func discardText(blocks uint64) string {
	return fmt.Sprintf("%d blocks (%s)", blocks, units.FormatSize(blocks*vdo.BlockSize))
}

// framedVDOSettings deactivates every VG stacked on the VDO LV and the VDO
// LV itself (which takes the pool down with it; lvchange -an on the pool LV
// leaves an active VDO LV running), changes the settings on the pool, and
// activates the VDO LV again and, above it, exactly the LVs that were
// active: a vgchange -ay would also start every guest disk Proxmox had left
// inactive.
func (p *planner) framedVDOSettings(pool, vdoLV, settings string) [][]string {
	if tp := p.thinOfDataVDO()[pool]; tp != nil {
		return p.framedDataVDOSettings(tp, pool, settings)
	}
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
	var reactivate []string
	for _, vg := range uppers {
		cmds = append(cmds, []string{"vgchange", "-an", vg})
		if v := p.h.VGs[vg]; v != nil {
			for _, key := range v.LVs {
				if lv := p.h.LVs[key]; lv != nil && lv.Active && !lv.Hidden {
					reactivate = append(reactivate, key)
				}
			}
		}
	}
	target := pool
	if vdoLV != "" {
		target = vdoLV
	}
	cmds = append(cmds, []string{"lvchange", "-an", target},
		[]string{"lvchange", "--vdosettings", settings, pool},
		[]string{"lvchange", "-ay", target})
	if len(reactivate) > 0 {
		cmds = append(cmds, append([]string{"lvchange", "-ay"}, reactivate...))
	}
	return cmds
}

// checkOvercommit reports a VDO LV larger than the pool can address.
// want is the declared pool (nil in audit mode): the remedy never reduces
// the LV below its declared virtual size, since that would move the host
// away from the desired state (keel would grow it back: vdo.virtual_size).
// When the declared virtual size is above what the pool holds thick, the
// way forward is the pool's declared size (keel grows a pool below it:
// vdo.size) or the desired state, not a smaller LV.
func (p *planner) checkOvercommit(object string, o observedVDO, want *spec.VDOPool) {
	if o.layout == nil || o.lv == nil {
		return
	}
	limit := o.layout.MaxThickVirtualBytes(o.extent)
	if o.lv.Size <= limit {
		return
	}
	msg := fmt.Sprintf("VDO LV %s is %s but pool %s can address at most %s thick: VDO can fill before what sits on it does",
		o.lv.FullName, units.FormatSize(o.lv.Size), object, units.FormatSize(limit))
	if !p.audit {
		msg += " (declare overcommit: true if that is intended)"
	}
	remedy, note := p.overcommitRemedy(o, limit)
	if tp := p.thinOfDataVDO()[o.pool.LV]; tp != nil {
		remedy, note = dataVDORemedy(tp, limit), ""
	} else if want != nil && want.VirtualSize.Bytes > limit {
		remedy, note = p.declaredOvercommitRemedy(object, o, limit, *want), ""
	}
	key := p.add(Finding{ID: VDOOvercommit, Object: o.lv.FullName,
		Message:  msg + note,
		Expected: "at most " + units.FormatSize(limit), Observed: units.FormatSize(o.lv.Size),
		Remedy: remedy,
	})
	p.reportOnly(VDOOvercommit, o.lv.FullName, "keel never shrinks a VDO LV itself: the finding's remedy reduces it by hand", key)
}

// overcommitRemedy reduces the VDO LV to the thick limit. lvm2 reduces a
// VDO LV like any LV since 2.03.11, discarding the area it drops
// (lvmvdo(7), "Extending or reducing the VDOLV size"). What sits on it
// shrinks first: a PV of a VG above with pvresize, which refuses while
// extents past the new end are allocated (so its -y only answers "size is
// less than the device"); lvreduce then runs with --fs ignore, because LVM's
// file system check cannot read an LVM2_member's used size and fails
// (lib/metadata/lv_manip.c _fs_reduce). Without a PV on it, plain lvreduce
// keeps LVM's own file system check and asks before it reduces.
func (p *planner) overcommitRemedy(o observedVDO, limit uint64) (remedy, note string) {
	size := units.LVMArg(limit)
	var pv *model.PV
	for _, name := range slices.Sorted(maps.Keys(p.h.PVs)) {
		if lv := p.lvOfPV(p.h.PVs[name]); lv != nil && lv.FullName == o.lv.FullName {
			pv = p.h.PVs[name]
			break
		}
	}
	if pv == nil {
		return shellAnd([][]string{{"lvreduce", "-L", size, o.lv.FullName}}), ""
	}
	if vg := p.h.VGs[pv.VG]; vg != nil && vg.ExtentSize > 0 && pv.DevSize > pv.PECount*vg.ExtentSize {
		overhead := pv.DevSize - pv.PECount*vg.ExtentSize // pe_start and the unused tail
		if limit < overhead || pv.PEAlloc > (limit-overhead)/vg.ExtentSize {
			return fmt.Sprintf("VG %s uses %s of PV %s, more than the %s the pool holds thick: free space in %s (lvreduce or remove LVs in it) until at most %d extents are allocated, then: %s",
					pv.VG, units.FormatSize(pv.PEAlloc*vg.ExtentSize), pv.Name, units.FormatSize(limit), pv.VG, (limit-min(overhead, limit))/vg.ExtentSize,
					shellAnd([][]string{{"pvresize", "-y", "--setphysicalvolumesize", size, pv.Name}, {"lvreduce", "-y", "--fs", "ignore", "-L", size, o.lv.FullName}})),
				"; the VG above uses more than that"
		}
	}
	return shellAnd([][]string{
		{"pvresize", "-y", "--setphysicalvolumesize", size, pv.Name},
		{"lvreduce", "-y", "--fs", "ignore", "-L", size, o.lv.FullName},
	}), ""
}

// checkVDOHealth covers mode, index, usage, dedupe timeouts and the slab
// remainder, in both modes.
func (p *planner) checkVDOHealth(object string, o observedVDO, alert float64) {
	pool := o.pool
	if st := pool.Status; st != nil {
		if st.Mode != "normal" {
			p.add(Finding{ID: VDOMode, Object: object,
				Message:  "VDO pool is in " + st.Mode + " mode",
				Expected: "normal", Observed: st.Mode,
				Remedy: "check dmesg and vdostats --verbose; read-only needs an offline rebuild of the reference counts",
			})
		}
		switch {
		case pool.Table == nil || !pool.Table.Deduplication || st.IndexState == "online":
		case st.IndexState == "opening":
			// dm-vdo loads (or, after an unclean stop, rebuilds) the
			// index after every start, and the state ends in online,
			// or in error or closed, which raise vdo.index
			// (index_state_to_string in drivers/md/dm-vdo/dedupe.c:
			// IS_CHANGING toward IS_OPENED). An error here would fire at
			// every boot and after every creation.
			p.add(Finding{ID: VDOIndexOpening, Object: object,
				Message:  "the UDS index is opening: VDO loads it at every start (a rebuild after an unclean stop takes longer); deduplication resumes once it is online",
				Expected: "online", Observed: st.IndexState,
				Remedy: fmt.Sprintf("none needed, it comes online by itself; follow it with: dmsetup status %s (the index state follows the mode and recovery fields)", pool.DMName),
			})
		default:
			p.add(Finding{ID: VDOIndex, Object: object,
				Message:  "deduplication is on but the UDS index is " + st.IndexState,
				Expected: "online", Observed: st.IndexState,
				Remedy: fmt.Sprintf("dmsetup message %s 0 index-enable; check dmesg", pool.DMName),
			})
		}
		used := st.UsedPercent()
		p.level("vdo_used", object, used, alert)
		if used >= 0 && used >= alert {
			p.add(Finding{ID: VDOUsage, Object: object,
				Message:  fmt.Sprintf("VDO pool is %s used, alert at %s", pct(used), pct(alert)),
				Expected: "below " + pct(alert), Observed: pct(used),
				Remedy: "discard unused blocks above (fstrim in the guests, saferemove 1 on a Proxmox VE storage) or grow the pool",
			})
		}
	}
	if s := pool.Stats; s != nil && s.DedupeAdviceTimeouts > 0 {
		p.add(Finding{ID: VDODedupeTimeouts, Object: object,
			Message:  fmt.Sprintf("%d dedupe advice timeouts: the index answered too late and duplicates were written", s.DedupeAdviceTimeouts),
			Expected: "0", Observed: strconv.FormatUint(s.DedupeAdviceTimeouts, 10),
			Remedy: "put the index on faster storage (split pool) or reduce load",
		})
	}
	if l := o.layout; l != nil && remainderWasted(*l) {
		f := Finding{ID: VDOSlabRemainder, Object: object,
			Message:  fmt.Sprintf("%d blocks (%s) between the last slab and the journal are never used", l.Unused.Count, units.FormatSize(l.Unused.Count*vdo.BlockSize)),
			Expected: "under a tenth of a slab", Observed: units.FormatSize(l.Unused.Count * vdo.BlockSize),
		}
		if grow, ok := remainderGrow(*l, o.extent); ok {
			f.Message += fmt.Sprintf("; LVM raises every pool extend to at least one slab (%s), which leaves the remainder as it is, so the grow that uses it adds %s",
				units.FormatSize(l.Slab.Blocks*vdo.BlockSize), units.FormatSize(grow))
			f.Remedy = shellAnd([][]string{{"lvextend", "-L", "+" + units.LVMArg(grow), object}})
			if want, ok := p.declaredVDOPool(object); ok && want.Size.Bytes > 0 {
				// The grow by hand would leave the declared size.
				f.Remedy = fmt.Sprintf("declare size: %q for %s (keel then grows the pool to it: vdo.size)", units.LVMArg(l.PhysicalBlocks*vdo.BlockSize+grow), object)
			}
		} else {
			f.Remedy = "a VDO pool cannot shrink: size the next pool in whole slabs plus overhead (keel recommend)"
		}
		p.add(f)
	}
}

// remainderWasted reports whether the space between the last slab and the
// recovery journal is above a tenth of a slab.
func remainderWasted(l vdo.Layout) bool {
	return l.Unused.Count*slabRemainderFractionDen > l.Slab.Blocks
}

// remainderGrow is the smallest whole-extent lvextend of the pool after
// which the remainder is no longer reported. LVM raises a VDO pool extend to
// at least max(one slab, 128 MiB + 128 KiB) (lib/metadata/lv_manip.c,
// "Increasing incremental size ... to fit new VDO slab"), and growing by one
// slab adds one slab and keeps the remainder; the grow that uses the
// remainder is one slab less the remainder, plus the slab LVM insists on.
// dm-vdo lays out a grown pool as vdoformat would a new one of that size
// (the journal and summary move to the new end).
func remainderGrow(l vdo.Layout, extent uint64) (uint64, bool) {
	if extent == 0 || extent%vdo.BlockSize != 0 {
		return 0, false
	}
	slab := l.Slab.Blocks * vdo.BlockSize
	want := 2*slab - l.Unused.Count*vdo.BlockSize
	grow := max(vdo.MinGrowBytes(slab, extent), (want+extent-1)/extent*extent)
	for range 1 + slab/extent {
		g := l.Geometry
		g.PhysicalBytes = l.PhysicalBlocks*vdo.BlockSize + grow
		after, err := vdo.NewLayout(g)
		if err != nil {
			return 0, false
		}
		if !remainderWasted(after) {
			return grow, true
		}
		grow += extent
	}
	return 0, false
}

// auditVDO judges an observed pool against the reference rules.
func (p *planner) auditVDO(pool *model.VDOPool) {
	object := pool.LV
	o := p.observeVDO(pool, "")
	if t := pool.Table; t != nil {
		slabs := uint64(1)
		if o.layout != nil {
			slabs = o.layout.Slabs
		}
		want := vdo.AutoThreadsCache(p.h.CPUs, slabs, t.BlockMapCacheBlocks)
		lvName := ""
		if o.lv != nil {
			lvName = o.lv.FullName
		}
		if o.threads != want {
			p.add(Finding{ID: VDOThreads, Object: object,
				Message:  fmt.Sprintf("thread layout is not one thread per CPU (%d CPUs); it changes only with the pool stopped (its VMs stopped)", p.h.CPUs),
				Expected: threadsText(want), Observed: threadsText(o.threads),
				Remedy: p.vdoSettingsRemedy(object, lvName, threadSettings(want)),
			})
		}
		if t.MaxDiscard == 1 {
			p.add(Finding{ID: VDOMaxDiscard, Object: object,
				Message:  "max_discard is LVM's default of one 4 KiB block: discards burn a core; it changes only with the pool stopped (its VMs stopped)" + p.passdownOff(pool),
				Expected: discardText(auditMaxDiscardBlocks), Observed: discardText(t.MaxDiscard),
				Remedy: p.vdoSettingsRemedy(object, lvName, fmt.Sprintf("max_discard=%d", auditMaxDiscardBlocks)),
			})
		}
	}
	p.checkOvercommit(object, o, nil)
	p.checkVDOHealth(object, o, auditVDOUsedAlert)
}

// lvmAvailableMiB is the memory LVM lets a VDO pool have when it creates or
// activates one (lib/metadata/vdo_manip.c, _get_memory_info): MemAvailable
// plus two thirds of the anonymous and shared pages, at most two thirds of
// the free swap.
func lvmAvailableMiB(m model.Memory) uint64 {
	swappable := min((m.AnonBytes+m.ShmemBytes)/3*2, m.SwapFreeBytes/3*2)
	return (m.AvailableBytes + swappable) >> 20
}

// vdoBill is one pool's line in planVDOMemory's sum.
type vdoBill struct {
	name     string
	mib      uint64
	pending  string // "" for a running pool, else what LVM still has to do
	cacheMiB uint64
	pool, lv string // observed pool and VDO LV ("vg/lv"), "" for one to create
}

// planVDOMemory compares LVM's RAM bill for VDO pools with what LVM checks
// it against (check_vdo_constrains, lib/metadata/vdo_manip.c): before
// lvcreate and before each activation, a pool's bill must fit in the memory
// available then (lvmAvailableMiB). Pools keel is to create and pools whose
// VDO LV is inactive are still to pass that check, together, against the
// memory available now; running pools passed it, but every one of them
// passes it again at the next boot, so all pools together must fit in the
// host's memory.
func (p *planner) planVDOMemory() {
	if p.h.Memory.TotalBytes == 0 {
		return
	}
	var bills []vdoBill
	for _, key := range slices.Sorted(maps.Keys(p.h.VDOPools)) {
		o := p.observeVDO(p.h.VDOPools[key], "")
		virt := uint64(0)
		b := vdoBill{name: key, pool: key}
		if o.lv != nil {
			virt = o.lv.Size
			b.lv = o.lv.FullName
			if !o.lv.Active {
				b.pending = "lvchange -ay " + o.lv.FullName
			}
		}
		b.cacheMiB = uint64(vdo.DefaultBlockMapCacheBytes >> 20)
		if o.cacheBlock > 0 {
			b.cacheMiB = o.cacheBlock * vdo.BlockSize >> 20
		}
		b.mib = vdo.RAMBill(o.physical, virt, b.cacheMiB, max(o.indexMiB, 256)).TotalMiB()
		bills = append(bills, b)
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
				bills = append(bills, vdoBill{name: vg + "/" + name, pending: "lvcreate",
					mib: vdo.RAMBill(d.PhysicalBytes, d.VirtualBytes, max(d.BlockMapCacheMiB, 128), max(d.IndexMemoryMiB, 256)).TotalMiB()})
			}
		}
	}
	var total, pending uint64
	var all, waiting []string
	for _, b := range bills {
		total += b.mib
		all = append(all, fmt.Sprintf("%s %d MiB", b.name, b.mib))
		if b.pending != "" {
			pending += b.mib
			waiting = append(waiting, fmt.Sprintf("%s %d MiB (%s)", b.name, b.mib, b.pending))
		}
	}
	avail, totalMiB := lvmAvailableMiB(p.h.Memory), p.h.Memory.TotalBytes>>20
	report := func(msg string, need, limit uint64, pendingOnly bool) {
		p.add(Finding{ID: VDOMemory, Object: "host", Message: msg,
			Expected: fmt.Sprintf("at most %d MiB", limit), Observed: fmt.Sprintf("%d MiB", need),
			Remedy: p.memoryRemedy(bills, need-limit, pendingOnly),
		})
	}
	switch {
	case pending > avail:
		report(fmt.Sprintf("VDO pools still to be created or activated need %d MiB of RAM (%s) and LVM counts %d MiB available (MemAvailable plus two thirds of swappable pages, at most two thirds of free swap): LVM refuses with \"Not enough free memory for VDO target\"",
			pending, strings.Join(waiting, ", "), avail), pending, avail, true)
	case total > totalMiB:
		report(fmt.Sprintf("VDO pools need %d MiB of RAM (%s), more than the host's %d MiB: at the next boot LVM refuses to activate the pools that no longer fit in the available memory",
			total, strings.Join(all, ", "), totalMiB), total, totalMiB, false)
	}
}

// memoryRemedy says how to close a shortfall of short MiB: the commands that
// lower the block map cache of observed pools above LVM's 128 MiB default
// (an offline VDO setting, so each is the stop, change, start sequence;
// pendingOnly keeps to the pools not running), then what commands cannot do.
func (p *planner) memoryRemedy(bills []vdoBill, short uint64, pendingOnly bool) string {
	var cmds [][]string
	var saved uint64
	for _, b := range bills {
		if b.pool == "" || b.lv == "" || b.cacheMiB <= 128 || (pendingOnly && b.pending == "") {
			continue
		}
		saved += vdo.RAMBill(0, 0, b.cacheMiB, 0).BlockMapCacheMiB - vdo.RAMBill(0, 0, 128, 0).BlockMapCacheMiB
		if b.pending != "" {
			// Inactive: change the setting, then activate.
			cmds = append(cmds, []string{"lvchange", "--vdosettings", "block_map_cache_size_mb=128", b.pool}, []string{"lvchange", "-ay", b.lv})
		} else {
			cmds = append(cmds, p.framedVDOSettings(b.pool, b.lv, "block_map_cache_size_mb=128")...)
		}
	}
	rest := fmt.Sprintf("free %d MiB (stop VMs or services), add RAM, or declare smaller indexMemory and blockMapCache for pools keel is to create", short)
	if len(cmds) == 0 {
		return rest
	}
	if saved >= short {
		return shellAnd(cmds)
	}
	return fmt.Sprintf("%s (saves %d MiB), and %s", shellAnd(cmds), saved, strings.Replace(rest, fmt.Sprint(short), fmt.Sprint(short-saved), 1))
}
