package removal

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/lvm/units"
	"github.com/keel-storage/keel/probes/model"
)

// A removal must never raise the data use of a pool under the LV it clears.
// Zero-filling writes: BLKZEROOUT uses WRITE ZEROES where the device offers
// it and otherwise writes zero pages (block/blk-lib.c). A dm-thin device
// offers no WRITE ZEROES (write_zeroes_max_bytes 0), so every zeroed chunk
// that was not mapped gets provisioned: the kernel's thin-provisioning
// document (Documentation/admin-guide/device-mapper/thin-provisioning.rst)
// maps a chunk on its first write, and "delete" or a discard is what gives
// chunks back. VDO keeps no data block for an all-zero block, so a zero-fill
// allocates nothing there. This file works out what a zero-fill would
// allocate in each pool below, and turns thin LVs to discard.

// stack is what lies under each LV, as far as removal needs it.
type stack struct {
	// Below maps an LV ("vg/lv") to the PVs its segments map to, sub-LVs
	// followed (a thin pool's data LV, RAID images).
	Below map[string][]string
	// Pool maps a thin or VDO LV to its pool ("vg/pool").
	Pool map[string]string
	// Mapped is the bytes a thin LV has provisioned, from its data_percent
	// (absent when unknown, or when it shares chunks with a snapshot).
	Mapped map[string]uint64
	// Pools are the thin and VDO pools by "vg/pool".
	Pools map[string]poolInfo
}

// poolInfo is one thin or VDO pool.
type poolInfo struct {
	Name string // "vg/pool"
	Kind string // "thin" or "vdo"
	// Zero is a thin pool's zeroing of new chunks (lvchange -Z).
	Zero bool
	// Chunk is a thin pool's chunk size in bytes.
	Chunk uint64
	// Free is the data space left in bytes; Known says whether it is known.
	Free  uint64
	Known bool
	// DataLV is the pool's data sub-LV ("vg/pool_tdata").
	DataLV string
}

// stackFromHost builds the stack from a probe pass.
func stackFromHost(h *model.Host) stack {
	s := stack{Below: map[string][]string{}, Pool: map[string]string{}, Mapped: map[string]uint64{}, Pools: map[string]poolInfo{}}
	// A thin LV that shares chunks with a snapshot (as its origin or as the
	// snapshot) copies a shared chunk on the first write to it, so its
	// mapped chunks do not bound a fill: its mapped bytes stay unknown.
	shares := map[string]bool{}
	for key, lv := range h.LVs {
		if lv.SegType == "thin" && lv.Origin != "" {
			shares[key], shares[lv.VG+"/"+lv.Origin] = true, true
		}
	}
	direct := map[string][]model.SegmentDev{}
	for key, lv := range h.LVs {
		for _, seg := range lv.Segments {
			direct[key] = append(direct[key], seg.Devices...)
		}
		if (lv.SegType == "thin" || lv.SegType == "vdo") && lv.Pool != "" {
			s.Pool[key] = lv.Pool
		}
		if lv.SegType == "thin" && lv.DataPercent >= 0 && !shares[key] {
			s.Mapped[key] = uint64(lv.DataPercent / 100 * float64(lv.Size))
		}
	}
	// PVs under each LV, through its sub-LVs (RAID images, a pool's data).
	var pvsOf func(key string, depth int) []string
	pvsOf = func(key string, depth int) []string {
		if depth > maxStackDepth {
			return nil
		}
		var out []string
		vg := lvm.Split(key).VG
		for _, d := range direct[key] {
			if d.IsPV {
				out = append(out, d.Name)
			} else {
				out = append(out, pvsOf(vg+"/"+d.Name, depth+1)...)
			}
		}
		return out
	}
	for key := range h.LVs {
		pvs := pvsOf(key, 0)
		sort.Strings(pvs)
		s.Below[key] = slices.Compact(pvs)
	}
	for key, tp := range h.ThinPools {
		p := poolInfo{Name: key, Kind: "thin", Zero: tp.Zero, Chunk: tp.ChunkSize}
		if lv := h.LVs[key]; lv != nil {
			p.DataLV = lv.DataLV
		}
		switch st := tp.Status; {
		case st != nil && !st.Failed && st.DataBlocks >= st.UsedDataBlocks:
			p.Free, p.Known = (st.DataBlocks-st.UsedDataBlocks)*tp.ChunkSize, true
		case tp.DataPercent >= 0:
			p.Free, p.Known = uint64((100-tp.DataPercent)/100*float64(tp.DataSize)), true
		}
		s.Pools[key] = p
	}
	for key, vp := range h.VDOPools {
		s.Pools[key] = poolInfo{Name: key, Kind: "vdo", DataLV: vp.DataLV}
	}
	// A thin pool's data sub-LV is below the pool itself.
	for key, p := range s.Pools {
		if p.DataLV != "" {
			s.Below[key] = s.Below[p.DataLV]
		}
	}
	return s
}

// maxStackDepth bounds the walk down the stack (a loop in a damaged model
// must not hang the planner).
const maxStackDepth = 16

// zeroFill adds to out, by pool, the most bytes that zero-filling n bytes of
// the LV key could allocate in each pool below it; VDO pools are listed with
// 0 (they keep no block for zeroes).
func (s stack) zeroFill(o *observed, key string, n uint64, depth int, out map[string]uint64) {
	if depth > maxStackDepth || n == 0 {
		return
	}
	var size uint64
	if lv := o.LVs[key]; lv != nil {
		size = lv.Size
	}
	if pool, ok := s.Pool[key]; ok {
		p := s.Pools[pool]
		switch p.Kind {
		case "vdo":
			out[pool] += 0
			return
		case "thin":
			alloc := n
			if p.Chunk > 0 {
				alloc = (n + p.Chunk - 1) / p.Chunk * p.Chunk
			}
			left := size
			if m, ok := s.Mapped[key]; ok && m <= left {
				left -= m
			}
			alloc = min(alloc, left)
			out[pool] += alloc
			// The pool writes the new chunks (zeroes, and its own zeroing of
			// them) to its data LV.
			s.zeroFill(o, pool, alloc, depth+1, out)
			return
		}
	}
	for _, pv := range s.Below[key] {
		below := o.lvOfPV(pv)
		if below == "" {
			continue // a disk
		}
		s.zeroFill(o, below, min(n, o.LVs[below].Size), depth+1, out)
	}
}

// lvOfPV returns "vg/lv" of the LV that is the PV pv, or "" for a disk.
func (o *observed) lvOfPV(pv string) string {
	var dm string
	if p := o.PVs[pv]; p != nil {
		dm = o.pvDMName(p)
	}
	if dm == "" {
		return ""
	}
	return o.byDM[dm]
}

// allocRules applies the allocation rules to t, planned for lv: a thin LV
// is discarded and never zero-filled, and refused when its pool does not
// zero reused chunks unless allowUnzeroed (removal.allowUnzeroedThinReuse);
// any other zero-fill is refused when it could allocate in a thin pool
// below.
func (o *observed) allocRules(lv *model.LV, t *Target, allowUnzeroed bool) error {
	key := lv.VG + "/" + lv.Name
	if lv.SegType == "thin" {
		pool := o.stack.Pool[key]
		if pool == "" {
			pool = "its pool"
		}
		if t.Mode == ModeZeroOut {
			t.Notes = append(t.Notes, fmt.Sprintf("%s is a thin LV: discarding it instead of zero-filling, which would make %s allocate every chunk of its %s (a thin device has no WRITE ZEROES offload, so zero pages are written)",
				t.Name(), pool, units.FormatSize(lv.Size)))
		}
		t.Mode, t.DiscardAfter, t.NoZeroFill = ModeDiscard, false, true
		if p, ok := o.stack.Pools[pool]; ok && !p.Zero {
			if !allowUnzeroed {
				return fmt.Errorf("%w: %s", ErrRefused, UnzeroedHold(pool))
			}
			t.Notes = append(t.Notes, UnzeroedNote(pool))
		}
		return nil
	}
	if t.Mode != ModeZeroOut {
		return nil
	}
	fill := map[string]uint64{}
	o.stack.zeroFill(o, key, lv.Size, 0, fill)
	var grow []string
	for _, name := range slices.Sorted(maps.Keys(fill)) {
		p, n := o.stack.Pools[name], fill[name]
		switch {
		case p.Kind == "vdo":
			t.Notes = append(t.Notes, fmt.Sprintf("zero-filling %s allocates nothing in vdo pool %s below: VDO keeps no block for an all-zero block", t.Name(), name))
		case n > 0:
			free := "free space unknown"
			if p.Known {
				free = units.FormatSize(p.Free) + " free"
				if n >= p.Free {
					free += ", so it could fill the pool"
				}
			}
			grow = append(grow, fmt.Sprintf("up to %s in thin pool %s (%s)", units.FormatSize(n), name, free))
		}
	}
	if len(grow) == 0 {
		return nil
	}
	return fmt.Errorf("%w: zero-filling it could allocate %s below it, and a removal never raises a pool's data use; to remove it without clearing its blocks (they stay inside the thin LV below): lvremove %s",
		ErrRefused, strings.Join(grow, ", "), t.Name())
}

// A thin pool with zeroing off (lvcreate/lvchange -Z n, the pool table's
// skip_block_zeroing feature) hands a newly provisioned chunk to a thin LV
// without writing it first: "the newly-provisioned blocks are not zeroed"
// (thin-provisioning.rst, "skip_block_zeroing"), so a read of a chunk the LV
// has not fully written returns whatever the chunk held. A discard or an
// lvremove returns a thin LV's chunks to the pool with their bytes: the
// next thin LV of that pool can read the removed disk's data. keel cannot
// clear the chunks first without writing them (a zero-fill of a thin LV
// provisions every unmapped chunk, alloc.go), so such a removal is held
// until the pool zeroes, or the desired state accepts the reuse.

// UnzeroedRemedy is the command that turns zeroing on in the thin pool pool
// ("vg/pool"); it works online (lvchange reloads the pool table).
func UnzeroedRemedy(pool string) string { return "lvchange -Z y " + pool }

// UnzeroedNote says what a removal from the thin pool pool (zeroing off)
// leaves behind when the desired state accepts it, with the command that
// turns zeroing on.
func UnzeroedNote(pool string) string {
	return fmt.Sprintf("thin pool %s does not zero new chunks (zeroing off): chunks freed by this removal keep their bytes until reused, and a thin LV given one can read them until it writes the whole chunk (removal.allowUnzeroedThinReuse is true); turn zeroing on: %s", pool, UnzeroedRemedy(pool))
}

// UnzeroedHold is the one-line reason a removal from the thin pool pool
// (zeroing off) is held, with both ways forward.
func UnzeroedHold(pool string) string {
	return fmt.Sprintf("thin pool %s does not zero new chunks (zeroing off), so the chunks this removal frees would give their bytes to the next thin LV of the pool; turn zeroing on: %s, or accept it: removal: allowUnzeroedThinReuse: true", pool, UnzeroedRemedy(pool))
}
