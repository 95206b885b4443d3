package vdo

import (
	"fmt"
	"strings"

	"github.com/keel-storage/keel/lvm/units"
)

// Pool is a desired LVM-VDO pool with the settings keel passes to lvcreate.
type Pool struct {
	VG   string
	Pool string // the VDO pool LV
	LV   string // the VDO LV on top
	// PVs, when set, restrict the allocation (lvcreate's trailing PV list).
	PVs           []string
	PhysicalBytes uint64 // -L
	// VirtualBytes is -V; 0 leaves it out, and vdoformat then picks
	// Layout.DefaultLogicalBlocks.
	VirtualBytes uint64
	// SlabBytes, IndexMemoryMiB and BlockMapCacheMiB default to LVM's
	// 2 GiB, 256 MiB and 128 MiB when zero.
	SlabBytes        uint64
	IndexMemoryMiB   uint64
	Sparse           bool
	BlockMapCacheMiB uint64
	// MaxDiscardBlocks is max_discard in 4K blocks; 0 leaves LVM's default (1).
	MaxDiscardBlocks uint64
	Compression      bool
	Deduplication    bool
	Threads          Threads
}

func (p Pool) withDefaults() Pool {
	if p.SlabBytes == 0 {
		p.SlabBytes = DefaultSlabBytes
	}
	if p.IndexMemoryMiB == 0 {
		p.IndexMemoryMiB = DefaultIndexMemoryBytes >> 20
	}
	if p.BlockMapCacheMiB == 0 {
		p.BlockMapCacheMiB = DefaultBlockMapCacheBytes >> 20
	}
	return p
}

// Geometry is the format geometry LVM will hand vdoformat for the pool.
func (p Pool) Geometry() (Geometry, error) {
	p = p.withDefaults()
	m, err := IndexMemoryFromMiB(p.IndexMemoryMiB)
	if err != nil {
		return Geometry{}, fmt.Errorf("vdo pool %s/%s: %w", p.VG, p.Pool, err)
	}
	return Geometry{PhysicalBytes: p.PhysicalBytes, SlabBytes: p.SlabBytes, IndexMemory: m, Sparse: p.Sparse}, nil
}

// VDOSettings is the --vdosettings value for the pool: space-separated
// key=value pairs in LVM's names (tools/toollib.c get_vdo_settings accepts
// one argument holding several pairs).
func (p Pool) VDOSettings() string {
	p = p.withDefaults()
	b01 := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	kv := []string{
		fmt.Sprintf("slab_size_mb=%d", p.SlabBytes>>20),
		fmt.Sprintf("index_memory_size_mb=%d", p.IndexMemoryMiB),
		fmt.Sprintf("use_sparse_index=%d", b01(p.Sparse)),
		fmt.Sprintf("block_map_cache_size_mb=%d", p.BlockMapCacheMiB),
	}
	if p.MaxDiscardBlocks != 0 {
		kv = append(kv, fmt.Sprintf("max_discard=%d", p.MaxDiscardBlocks))
	}
	t := p.Threads
	kv = append(kv,
		fmt.Sprintf("logical_threads=%d", t.Logical),
		fmt.Sprintf("physical_threads=%d", t.Physical),
		fmt.Sprintf("hash_zone_threads=%d", t.Hash),
		fmt.Sprintf("cpu_threads=%d", t.CPU),
		fmt.Sprintf("bio_threads=%d", t.Bio),
		fmt.Sprintf("ack_threads=%d", t.Ack),
		fmt.Sprintf("use_compression=%d", b01(p.Compression)),
		fmt.Sprintf("use_deduplication=%d", b01(p.Deduplication)),
	)
	return strings.Join(kv, " ")
}

// LVCreateArgs is the argv that creates the pool and its VDO LV in one step:
//
//	lvcreate -y --type vdo -L 40G -V 35G -n vdolv vdolab/vdopool [PV...] --vdosettings "..."
func (p Pool) LVCreateArgs() []string {
	args := []string{"lvcreate", "-y", "--type", "vdo", "-L", LVMSize(p.PhysicalBytes)}
	if p.VirtualBytes != 0 {
		args = append(args, "-V", LVMSize(p.VirtualBytes))
	}
	args = append(args, "-n", p.LV, p.VG+"/"+p.Pool)
	args = append(args, p.PVs...)
	return append(args, "--vdosettings", p.VDOSettings())
}

// LVMSize writes a byte count in the largest LVM unit that divides it
// exactly ("40G", "132M", "4945236K"), or in bytes with LVM's "b" suffix
// (units.LVMArg).
func LVMSize(n uint64) string { return units.LVMArg(n) }

// SplitCreateArgs are the commands that build a split pool as three
// segments and format it (the VDO article's recipe, with the smallest head
// and tail): an LV of the head extents on the fast PVs, an extend by the
// middle extents on the slow PVs, an extend by the tail extents on the fast
// PVs, then lvconvert --type vdo-pool, which formats it and creates the VDO
// LV. p.PVs is ignored.
func (p Pool) SplitCreateArgs(s SplitPlan, fast, slow []string) [][]string {
	vgPool := p.VG + "/" + p.Pool
	ext := func(n uint64) string { return fmt.Sprintf("%d", n) }
	return [][]string{
		append([]string{"lvcreate", "-y", "-l", ext(s.Head.Count), "-n", p.Pool, p.VG}, fast...),
		append([]string{"lvextend", "-l", "+" + ext(s.Middle.Count), vgPool}, slow...),
		append([]string{"lvextend", "-l", "+" + ext(s.Tail.Count), vgPool}, fast...),
		p.ConvertArgs(),
	}
}

// ConvertArgs is the lvconvert that turns the plain LV vg/pool into the VDO
// pool (vdoformat runs inside it) and creates its VDO LV: the last step of
// SplitCreateArgs, and what lvcreate --type vdo does after it made the LV.
func (p Pool) ConvertArgs() []string {
	args := []string{"lvconvert", "-y", "--type", "vdo-pool", "-n", p.LV}
	if p.VirtualBytes != 0 {
		args = append(args, "-V", LVMSize(p.VirtualBytes))
	}
	return append(args, p.VG+"/"+p.Pool, "--vdosettings", p.VDOSettings())
}

// GrowArgs are the lvextend commands of a GrowPlan for the pool: slow steps
// allocate on the slow PVs, the last step on the fast PVs.
func (p Pool) GrowArgs(g GrowPlan, fast, slow []string) [][]string {
	var out [][]string
	for _, s := range g.Steps {
		pvs := slow
		if s.Fast {
			pvs = fast
		}
		out = append(out, append([]string{"lvextend", "-l", fmt.Sprintf("+%d", s.Extents), p.VG + "/" + p.Pool}, pvs...))
	}
	return out
}
