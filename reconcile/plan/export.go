package plan

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/keel-storage/keel/lvm/lvmregex"
	"github.com/keel-storage/keel/lvm/units"
	"github.com/keel-storage/keel/lvm/vdo"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/schema/spec"
)

// Exported is a desired state written from a host as it is (keel export):
// CUE text to review and commit, and notes on what it leaves out.
type Exported struct {
	Text  string
	Notes []string
}

// Export writes the desired state that describes h as it is: the lvm.conf
// settings keel manages, every VG with its PVs, its LVM-VDO pools (sizes,
// geometry, settings and the running thread layout) and thin pools, and
// every registered bcache device with its tunables. keel check against it
// on the same host raises no finding about a setting; what it still reports
// is the host's health (usage, a read-only pool, a missing PV), which no
// desired state changes. It reads the pools with the planner's own readers,
// so the values are the ones the planner compares. Nothing is created or
// removed by it: create is never set, absent never listed.
func Export(h *model.Host) Exported {
	x := &exporter{p: newPlanner(h), h: h}
	x.lvm()
	x.vgs()
	x.bcache()
	return Exported{Text: x.b.String(), Notes: x.notes}
}

type exporter struct {
	p     *planner
	h     *model.Host
	b     strings.Builder
	notes []string
}

func (x *exporter) note(format string, args ...any) {
	x.notes = append(x.notes, fmt.Sprintf(format, args...))
}

func (x *exporter) line(indent int, format string, args ...any) {
	x.b.WriteString(strings.Repeat("\t", indent))
	fmt.Fprintf(&x.b, format, args...)
	x.b.WriteString("\n")
}

// q quotes s as a CUE string (JSON's quoting is valid CUE), with &, < and
// > as they are: a filter pattern reads as the operator wrote it.
func q(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string: cannot fail
	return strings.TrimSuffix(b.String(), "\n")
}

func qlist(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = q(s)
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// lvm writes the devices settings lvm.conf has: scan_lvs and
// use_devicesfile as LVM reports them (lvmconfig --typeconfig full), and
// global_filter when keel can write it back entry for entry.
func (x *exporter) lvm() {
	vals := x.h.LVMConfig.Values
	if len(vals) == 0 {
		x.note("lvm.conf: LVM's configuration could not be read; lvm is left out")
		return
	}
	var out []string
	for _, s := range []struct{ field, key string }{{"scanLVs", "devices/scan_lvs"}, {"useDevicesFile", "devices/use_devicesfile"}} {
		if v, ok := x.p.lvmBool(s.key); ok {
			out = append(out, fmt.Sprintf("%s: %t", s.field, v))
		}
	}
	got := parseLVMList(vals["devices/global_filter"])
	var entries []lvmregex.Entry
	for _, g := range got {
		e, err := lvmregex.ParseEntry(g)
		if err != nil {
			x.note("lvm.conf: devices/global_filter %s: %v; it is left out, not managed", quoteList(got), err)
			x.writeLVM(out)
			return
		}
		entries = append(entries, e)
	}
	if gf, ok := filterFor(got, entries); ok {
		var parts []string
		if len(gf.Reject) > 0 {
			parts = append(parts, "reject: "+qlist(gf.Reject))
		}
		if len(gf.Accept) > 0 {
			parts = append(parts, "accept: "+qlist(gf.Accept))
		}
		out = append(out, "globalFilter: {"+strings.Join(parts, ", ")+"}")
	} else if len(got) > 0 {
		x.note("lvm.conf: devices/global_filter %s is not in the form keel writes, so it is left out (not managed); %s", quoteList(got), x.p.filterAdvice(entries))
	}
	x.writeLVM(out)
}

// writeLVM writes the lvm block with the settings in out, if any.
func (x *exporter) writeLVM(out []string) {
	if len(out) == 0 {
		return
	}
	x.line(0, "lvm: {")
	for _, o := range out {
		x.line(1, "%s", o)
	}
	x.line(0, "}")
}

// filterFor returns the declared filter whose generated entries are got
// exactly, if there is one: leading rejects, then accepts followed by a
// final r|.*|.
func filterFor(got []string, entries []lvmregex.Entry) (spec.GlobalFilter, bool) {
	var gf spec.GlobalFilter
	i := 0
	for ; i < len(entries) && !entries[i].Accept; i++ {
		gf.Reject = append(gf.Reject, entries[i].Regex)
	}
	for ; i < len(entries) && entries[i].Accept; i++ {
		gf.Accept = append(gf.Accept, entries[i].Regex)
	}
	return gf, len(got) > 0 && slices.Equal(gf.Entries(), got)
}

// filterAdvice says how to declare a filter keel does not write as is. A
// final a|.*| after rejects is not the same as the rejects alone: LVM
// decides each of a device's names by the first entry that matches it and
// uses the device as soon as one name is accepted
// (lib/filters/filter-regex.c, lvmregex.Filter.Decide), so a|.*| accepts
// an LV whose /dev/mapper name a reject matches by its /dev/dm-N name,
// while without it a device with one rejected name and no accepted one is
// hidden. The advice names, from the host's LVs and PVs, what the rejects
// alone would hide besides.
func (p *planner) filterAdvice(entries []lvmregex.Entry) string {
	n := len(entries)
	switch {
	case n == 1 && entries[0].Accept && entries[0].Regex == ".*":
		return "it accepts every device, as LVM does with no filter"
	case n > 1 && entries[n-1].Accept && entries[n-1].Regex == ".*" &&
		!slices.ContainsFunc(entries[:n-1], func(e lvmregex.Entry) bool { return e.Accept }):
		var rejects []string
		for _, e := range entries[:n-1] {
			rejects = append(rejects, e.Regex)
		}
		more, pvs := p.hiddenWithoutAcceptAll(entries)
		what := "on this host the rejects alone hide nothing more"
		if len(more) > 0 {
			what = "the rejects alone also hide " + strings.Join(more, ", ")
		}
		advice := fmt.Sprintf("the final a|.*| accepts every device by any name no reject matches, so LVM does not read it as the rejects alone (%s); to manage the rejects alone declare lvm: globalFilter: reject: %s", what, qlist(rejects))
		if len(pvs) > 0 {
			advice += fmt.Sprintf(", and add an accept for %s, or keel refuses to write a filter that hides a PV in use", strings.Join(pvs, ", "))
		}
		return advice
	}
	return "declare lvm.globalFilter by hand after review (docs/configuration.md)"
}

// hiddenWithoutAcceptAll judges the host's active LVs and its PVs with the
// filter entries (which end in a|.*|) and with the same entries without
// that last one, and lists each device accepted by the first and hidden by
// the second, with the name that passes a|.*|; pvs lists the PVs of VGs
// among them.
func (p *planner) hiddenWithoutAcceptAll(entries []lvmregex.Entry) (more, pvs []string) {
	all := make([]string, len(entries))
	for i, e := range entries {
		all[i] = e.String()
	}
	with, err1 := lvmregex.NewFilter(all)
	without, err2 := lvmregex.NewFilter(all[:len(all)-1])
	if err1 != nil || err2 != nil {
		return nil, nil
	}
	judge := func(name string, aliases []string) bool {
		w := with.Decide(aliases)
		if !w.Accepted || without.Decide(aliases).Accepted {
			return false
		}
		more = append(more, fmt.Sprintf("%s (a|.*| accepts it as %s)", name, w.Alias))
		return true
	}
	for _, key := range p.sortedLVKeys() {
		if lv := p.h.LVs[key]; !lv.Hidden && lv.Active {
			judge(lv.FullName, p.lvAliases(lv))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.h.PVs)) {
		pv := p.h.PVs[name]
		if p.lvOfPV(pv) != nil {
			continue // judged as an LV above
		}
		if judge("PV "+name, p.pvAliases(pv)) && pv.VG != "" {
			pvs = append(pvs, name)
		}
	}
	return more, pvs
}

// vgs writes every VG with its PVs and pools.
func (x *exporter) vgs() {
	names := slices.Sorted(maps.Keys(x.h.VGs))
	if len(names) == 0 {
		return
	}
	x.line(0, "volumeGroups: {")
	for _, name := range names {
		vg := x.h.VGs[name]
		var pvs []string
		for _, pvName := range vg.PVs {
			pvs = append(pvs, x.pvPath(name, pvName))
		}
		if len(pvs) == 0 {
			x.note("vg %s: no PV is known; it is left out", name)
			continue
		}
		x.line(1, "%s: {", q(name))
		x.line(2, "pvs: %s", qlist(pvs))
		x.vdoPools(name)
		x.thinPools(name)
		x.line(1, "}")
		if vg.Shared {
			x.note("vg %s is shared between hosts (lock type %q): declare it on every host that uses it, and expect keel to refuse removals on it", name, vg.LockType)
		}
	}
	x.line(0, "}")
}

// pvPath is the path a desired state names a PV by: /dev/VG/LV for a PV on
// an LV; else a stable /dev/disk/by-id name (the device's own serial or WWN
// before LVM's and device-mapper's names); else LVM's name, with a note.
func (x *exporter) pvPath(vg, pvName string) string {
	pv := x.h.PVs[pvName]
	if pv == nil {
		x.note("vg %s: PV %s is not in the probe; its name is written as LVM reports it", vg, pvName)
		return pvName
	}
	if lv := x.p.lvOfPV(pv); lv != nil {
		return "/dev/" + lv.FullName
	}
	var best string
	rank := func(id string) int {
		switch {
		case strings.HasPrefix(id, "lvm-pv-uuid-"), strings.HasPrefix(id, "dm-"):
			return 0
		case strings.HasPrefix(id, "wwn-"), strings.HasPrefix(id, "nvme-eui."):
			return 1
		}
		return 2
	}
	for _, id := range pv.ByID {
		id = strings.TrimPrefix(id, "/dev/disk/by-id/")
		if rank(id) > 0 && (best == "" || rank(id) > rank(best)) {
			best = id
		}
	}
	if best != "" {
		return "/dev/disk/by-id/" + best
	}
	x.note("vg %s: PV %s has no /dev/disk/by-id name; its kernel name can change at boot, replace it by a stable path", vg, pvName)
	return pvName
}

// poolsIn returns, sorted, the keys of the pools in m that belong to vg.
func poolsIn[P any](m map[string]P, vg string, vgOf func(P) string) []string {
	var keys []string
	for k, pool := range m {
		if vgOf(pool) == vg {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// vdoPools writes the LVM-VDO pools of vg as the planner reads them.
func (x *exporter) vdoPools(vgName string) {
	keys := poolsIn(x.h.VDOPools, vgName, func(p *model.VDOPool) string { return p.VG })
	if len(keys) == 0 {
		return
	}
	x.line(2, "vdoPools: {")
	for _, k := range keys {
		pool := x.h.VDOPools[k]
		o := x.p.observeVDO(pool, "")
		if o.lv == nil {
			x.note("vdo pool %s: no VDO LV uses it; it is left out", pool.LV)
			continue
		}
		x.line(3, "%s: {", q(pool.Name))
		x.line(4, "lv: %s", q(o.lv.Name))
		x.line(4, "size: %s", q(units.LVMArg(x.h.LVs[pool.LV].Size)))
		x.line(4, "virtualSize: %s", q(units.LVMArg(o.lv.Size)))
		if o.layout != nil && o.lv.Size > o.layout.MaxThickVirtualBytes(o.extent) {
			x.line(4, "// The VDO LV is larger than the pool can address thick: review.")
			x.line(4, "overcommit: true")
		}
		if o.slab > 0 {
			x.line(4, "slabSize: %s", q(units.LVMArg(o.slab)))
		}
		if o.indexMiB > 0 {
			x.line(4, "indexMemory: %s", q(units.LVMArg(o.indexMiB<<20)))
		}
		if o.sparse {
			x.line(4, "sparseIndex: true")
		}
		if t := pool.Table; t != nil {
			x.line(4, "compression: %t", t.Compression)
			x.line(4, "deduplication: %t", t.Deduplication)
			x.line(4, "maxDiscard: %s", q(units.LVMArg(t.MaxDiscard*vdo.BlockSize)))
			x.line(4, "blockMapCache: %s", q(units.LVMArg(t.BlockMapCacheBlocks*vdo.BlockSize)))
			x.line(4, "threads: {logical: %d, physical: %d, hash: %d, cpu: %d, bio: %d, ack: %d}",
				t.Logical, t.Physical, t.Hash, t.CPU, t.Bio, t.Ack)
		} else {
			x.note("vdo pool %s is inactive: compression, deduplication, maxDiscard, blockMapCache and threads are not read; activate it and export again", pool.LV)
		}
		if fast := x.splitFast(pool); len(fast) > 0 {
			x.line(4, "split: fast: %s", qlist(fast))
		}
		x.line(3, "}")
	}
	x.line(2, "}")
}

// splitFast returns the fast PVs of a split pool: when the pool's data LV
// lies on more than one PV and its head (the index region, which growing
// never moves) sits on PVs that hold less than the whole data LV, those
// PVs are the split's fast PVs. Otherwise nil: the pool is not split.
func (x *exporter) splitFast(pool *model.VDOPool) []string {
	data := x.h.LVs[pool.DataLV]
	if data == nil {
		return nil
	}
	dataPVs := map[string]bool{}
	for _, seg := range data.Segments {
		for _, d := range seg.Devices {
			if d.IsPV {
				dataPVs[d.Name] = true
			}
		}
	}
	head := map[string]bool{}
	for _, r := range pool.Regions {
		if r.Name == "index" {
			for _, on := range r.On {
				head[on.PV] = true
			}
		}
	}
	if len(dataPVs) < 2 || len(head) == 0 || len(head) >= len(dataPVs) {
		return nil
	}
	var fast []string
	for _, pv := range slices.Sorted(maps.Keys(head)) {
		if !dataPVs[pv] {
			return nil
		}
		fast = append(fast, x.pvPath(pool.VG, pv))
	}
	return fast
}

// thinPools writes the dm-thin pools of vg.
func (x *exporter) thinPools(vgName string) {
	keys := poolsIn(x.h.ThinPools, vgName, func(p *model.ThinPool) string { return p.VG })
	if len(keys) == 0 {
		return
	}
	x.line(2, "thinPools: {")
	for _, k := range keys {
		tp := x.h.ThinPools[k]
		x.line(3, "%s: {", q(tp.Name))
		x.line(4, "size: %s", q(units.LVMArg(tp.DataSize)))
		x.line(4, "chunkSize: %s", q(units.LVMArg(tp.ChunkSize)))
		x.line(4, "zero: %t", tp.Zero)
		if tp.MetadataSize > 0 {
			x.line(4, "metadataSize: %s", q(units.LVMArg(tp.MetadataSize)))
		}
		x.line(3, "}")
	}
	x.line(2, "}")
}

// bcache writes every registered backing device by its bcache UUID (which,
// unlike bcacheN, survives a reboot) with its cache set, mode and tunables.
func (x *exporter) bcache() {
	uuids := slices.Sorted(maps.Keys(x.h.Bcache))
	if len(uuids) == 0 {
		return
	}
	x.line(0, "bcache: {")
	for _, uuid := range uuids {
		b := x.h.Bcache[uuid]
		name := b.Device
		if name == "" {
			name = "bcache-" + uuid[:8]
		}
		x.line(1, "%s: {", q(name))
		x.line(2, "backing: %s", q(uuid))
		if b.CacheSet != "" {
			x.line(2, "cacheSet: %s", q(b.CacheSet))
		}
		if b.CacheMode != "" {
			x.line(2, "cacheMode: %s", q(b.CacheMode))
		}
		x.line(2, "sequentialCutoff: %d", b.SequentialCutoff)
		x.line(2, "writebackPercent: %d", b.WritebackPercent)
		if b.WritebackRateMinimum > 0 {
			x.line(2, "writebackRateMinimum: %d", b.WritebackRateMinimum)
		}
		x.writebackRate(name, b)
		// The thresholds are the cache set's (/sys/fs/bcache/<set>/), declared
		// on each device that uses the set, as the planner reads them.
		if cs := x.h.CacheSets[b.CacheSet]; cs != nil {
			x.line(2, "congestedReadThresholdUs: %d", cs.CongestedReadThresholdUS)
			x.line(2, "congestedWriteThresholdUs: %d", cs.CongestedWriteThresholdUS)
		}
		x.line(1, "}")
	}
	x.line(0, "}")
}

// writebackRate writes the device's writeback_rate when it is fixed: with
// writeback_percent above 0 the kernel's rate controller sets it every few
// seconds (update_writeback_rate, drivers/md/bcache/writeback.c) and the
// planner does not judge it, so it is left out with a note.
func (x *exporter) writebackRate(name string, b *model.Bcache) {
	read, ok := b.Tunables["writeback_rate"]
	if !ok {
		return
	}
	if b.WritebackPercent != 0 {
		x.note("bcache %s: writebackRate left out: writeback_percent %d lets the kernel move writeback_rate (now %s/s); declare writebackPercent: 0 and writebackRate to fix it", name, b.WritebackPercent, read)
		return
	}
	v, ok := rateSectors(read)
	if !ok {
		x.note("bcache %s: writebackRate left out: writeback_rate %q is not a rate bcache prints", name, read)
		return
	}
	x.line(2, "writebackRate: %d", v)
}

// rateSectors returns the writeback_rate, in sectors per second as the
// schema and the kernel's store take it, that reads back as read: sysfs
// prints it as bch_hprint of rate<<9 bytes (drivers/md/bcache/sysfs.c),
// which truncates, so dividing the bytes read by 512 may give a rate that
// reads lower. The planner compares model.Hprint(rate*512) with the
// reading; this is the smallest rate in the schema's 1..2^31-1 for which
// they are equal. bch_hprint's (unit, integer, tenth) grows with its
// argument, so the search is a bisection.
func rateSectors(read string) (int64, bool) {
	want, ok := hprintKey(read)
	if !ok {
		return 0, false
	}
	const maxRate = 1<<31 - 1
	i := sort.Search(maxRate, func(i int) bool {
		got, _ := hprintKey(model.Hprint(int64(i+1) * 512))
		return slices.Compare(got[:], want[:]) >= 0
	})
	v := int64(i + 1)
	if i == maxRate || model.Hprint(v*512) != read {
		return 0, false
	}
	return v, true
}

// hprintKey splits a bch_hprint reading ("3.3M") into its unit's rank, its
// integer and its tenth, the order in which bch_hprint's output grows.
func hprintKey(s string) ([3]int64, bool) {
	if s == "" {
		return [3]int64{}, false
	}
	u := strings.IndexByte("kMGTPEZY", s[len(s)-1])
	whole, tenth, ok := strings.Cut(s[:len(s)-1], ".")
	if u < 0 || !ok || len(tenth) != 1 {
		return [3]int64{}, false
	}
	q, err1 := strconv.ParseInt(whole, 10, 64)
	d, err2 := strconv.ParseInt(tenth, 10, 64)
	if err1 != nil || err2 != nil || q < 0 {
		return [3]int64{}, false
	}
	return [3]int64{int64(u), q, d}, true
}
