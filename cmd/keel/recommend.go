package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/keel-storage/keel/lvm/units"
	"github.com/keel-storage/keel/lvm/vdo"
	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/shell"
)

// recommendOpts are the parsed flags of keel recommend.
type recommendOpts struct {
	cpus        int
	size        uint64
	virtual     uint64 // 0: the largest thick size
	indexMiB    uint64
	slab        uint64
	sparse      bool
	cacheMiB    uint64
	maxDiscard  uint64
	overcommit  bool
	split       bool
	extent      uint64
	grow        uint64
	vg, pool    string
	lv          string
	fast, slow  []string
	compression bool
	dedupe      bool
	// nodeMemAvailable is MemAvailable of the --node snapshot, 0 without one.
	nodeMemAvailable uint64
}

// recommendation is everything keel recommend reports; it is also the JSON form.
type recommendation struct {
	Input struct {
		CPUs             int    `json:"cpus"`
		SizeBytes        uint64 `json:"sizeBytes"`
		VirtualBytes     uint64 `json:"virtualBytes"`
		SlabBytes        uint64 `json:"slabBytes"`
		IndexMemoryMiB   uint64 `json:"indexMemoryMiB"`
		IndexSetting     string `json:"indexSetting"`
		Sparse           bool   `json:"sparse"`
		BlockMapCacheMiB uint64 `json:"blockMapCacheMiB"`
		ExtentBytes      uint64 `json:"extentBytes"`
	} `json:"input"`
	Layout        vdo.Layout `json:"layout"`
	CapacityLines []string   `json:"vdoformatPrints"`
	Capacity      struct {
		AddressableBytes      uint64 `json:"addressableBytes"`
		DataBlocks            uint64 `json:"dataBlocks"`
		MaxThickLogicalBlocks uint64 `json:"maxThickLogicalBlocks"`
		MaxThickVirtualBytes  uint64 `json:"maxThickVirtualBytes"`
		VirtualFitsThick      bool   `json:"virtualFitsThick"`
		BlockMapPages         uint64 `json:"blockMapPages"`
		UnusedBytes           uint64 `json:"unusedBytes"`
		// SameSlabsBytes is the smallest whole-extent pool with the same slab count.
		SameSlabsBytes uint64 `json:"sameSlabsBytes"`
		// NextSlabBytes is the smallest whole-extent pool with one slab more.
		NextSlabBytes uint64 `json:"nextSlabBytes"`
	} `json:"capacity"`
	RAM         vdo.RAM `json:"ram"`
	RAMTotalMiB uint64  `json:"ramTotalMiB"`
	// NodeMemAvailableMiB is the --node snapshot's MemAvailable, 0 without --node.
	NodeMemAvailableMiB uint64      `json:"nodeMemAvailableMiB,omitempty"`
	DedupeWindow        uint64      `json:"dedupeWindowBytes"`
	Threads             vdo.Threads `json:"threads"`
	// LVCreate, SplitCmds and GrowCmds are left out when Problems refuse the pool.
	LVCreate  []string       `json:"lvcreate,omitempty"`
	Split     *vdo.SplitPlan `json:"split,omitempty"`
	SplitCmds [][]string     `json:"splitCommands,omitempty"`
	Grow      *vdo.GrowPlan  `json:"grow,omitempty"`
	GrowCmds  [][]string     `json:"growCommands,omitempty"`
	Problems  []string       `json:"problems,omitempty"`
}

// sizeFlag is a flag.Value holding a size parsed with units.ParseSize.
type sizeFlag struct {
	v   *uint64
	set bool
}

func (s *sizeFlag) String() string {
	if s == nil || s.v == nil || !s.set {
		return ""
	}
	return units.FormatSize(*s.v)
}

func (s *sizeFlag) Set(v string) error {
	n, err := units.ParseSize(v)
	if err != nil {
		return err
	}
	*s.v, s.set = n, true
	return nil
}

// runRecommend implements `keel recommend`. Exit 0: report printed; 1: a
// --virtual-size the pool cannot hold thick (without --overcommit) or a RAM
// bill above the node's memory; 2: invalid input, or the report could not
// be written.
func runRecommend(args []string, stdout, stderr io.Writer) int {
	o := recommendOpts{vg: "VG", pool: "vpool", lv: "vdolv", compression: true, dedupe: true}
	fs := newFlags("recommend", "",
		"The VDO calculator: where vdoformat puts the index, slabs and journal, what the pool can",
		"address, the largest virtual size it holds thick, LVM's RAM bill, a thread layout for the",
		"CPU count and the lvcreate line. Sizes take LVM's suffixes (k m g t p e, KiB..EiB); a bare",
		"number is bytes. Exit status: 0 ok, 1 the pool does not fit (a virtual size above the thick",
		"limit, a RAM bill above the node's memory), 2 invalid input (bad flags or sizes).")
	fs.IntVar(&o.cpus, "cpus", 0, "`N` CPUs to spread VDO threads over (default: this host's count)")
	sizeF := &sizeFlag{v: &o.size}
	fs.Var(sizeF, "size", "pool (data LV) `SIZE`, as lvcreate -L (required)")
	fs.Var(sizeF, "L", "same as --size `SIZE`")
	virtF := &sizeFlag{v: &o.virtual}
	fs.Var(virtF, "virtual-size", "VDO LV `SIZE`, as lvcreate -V (default: the largest thick size)")
	fs.Var(virtF, "V", "same as --virtual-size `SIZE`")
	o.indexMiB, o.slab, o.cacheMiB, o.extent = 256<<20, vdo.DefaultSlabBytes, 128<<20, vdo.DefaultExtentBytes
	fs.Var(&sizeFlag{v: &o.indexMiB}, "index-memory", "UDS index memory `SIZE` (default 256M)")
	fs.Var(&sizeFlag{v: &o.slab}, "slab-size", "slab `SIZE`, a power of two 128M..32G (default 2G)")
	fs.Var(&sizeFlag{v: &o.cacheMiB}, "block-map-cache", "block map cache `SIZE` (default 128M)")
	fs.BoolVar(&o.sparse, "sparse", false, "sparse UDS index")
	fs.Uint64Var(&o.maxDiscard, "max-discard", 4096, "max_discard in 4K `BLOCKS` for the lvcreate line (LVM's own default of 1 makes discards burn a core)")
	fs.BoolVar(&o.overcommit, "overcommit", false, "allow a --virtual-size above the thick limit")
	fs.BoolVar(&o.split, "split", false, "plan a split pool: head and tail on fast PVs, slabs on slow PVs")
	ext := &sizeFlag{v: &o.extent}
	fs.Var(ext, "extent-size", "LVM physical extent `SIZE` (default 4M)")
	fs.Var(ext, "split-fast-extent-size", "same as --extent-size `SIZE`")
	fs.Var(&sizeFlag{v: &o.grow}, "grow", "plan growing the split pool by `SIZE`")
	fs.StringVar(&o.vg, "vg", o.vg, "volume group `NAME` for the printed commands")
	fs.StringVar(&o.pool, "pool", o.pool, "VDO pool LV `NAME` for the printed commands")
	fs.StringVar(&o.lv, "lv", o.lv, "VDO LV `NAME` for the printed commands")
	var fast, slow multiFlag
	fs.Var(&fast, "fast-pv", "fast `PV` for a split pool (repeatable; default FAST_PV)")
	fs.Var(&slow, "slow-pv", "slow `PV` for a split pool (repeatable; default SLOW_PV)")
	format := choice(fs, "format", "output `FORMAT`: text or json", "text", "json")
	node := fs.String("node", "", "take the CPU count and available memory from the node `SNAPSHOT` (default: this host's CPU count, memory not checked)")
	if code, ok := parseArgs(fs, args, stdout, stderr); !ok {
		return code
	}
	if code := noArgs(fs, stderr); code != exitOK {
		return code
	}
	if !sizeF.set {
		return usageError(fs, stderr, "--size is required")
	}
	o.fast, o.slow = fast, slow
	if *node != "" {
		src, err := hostio.NodeSource(*node, time.Minute, liveOptions())
		if err != nil {
			fmt.Fprintf(stderr, "keel recommend: %v\n", err)
			return exitError
		}
		h, err := probes.Probe(context.Background(), src)
		if h == nil {
			fmt.Fprintf(stderr, "keel recommend: node %s: %v\n", *node, err)
			return exitError
		}
		if o.cpus == 0 {
			o.cpus = h.CPUs
		}
		o.nodeMemAvailable = h.Memory.AvailableBytes
	}
	if o.cpus == 0 {
		o.cpus = runtime.NumCPU()
	}
	if len(o.fast) == 0 {
		o.fast = []string{"FAST_PV"}
	}
	if len(o.slow) == 0 {
		o.slow = []string{"SLOW_PV"}
	}
	r, err := recommend(o)
	if err != nil {
		fmt.Fprintf(stderr, "keel recommend: %v\n", err)
		return exitError
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // the lvcreate line is a shell command
		if err := enc.Encode(r); err != nil {
			fmt.Fprintf(stderr, "keel recommend: %v\n", err)
			return exitError
		}
	} else if err := writeRecommendation(stdout, r); err != nil {
		fmt.Fprintf(stderr, "keel recommend: %v\n", err)
		return exitError
	}
	for _, p := range r.Problems {
		fmt.Fprintf(stderr, "keel recommend: %s\n", p)
	}
	if len(r.Problems) > 0 {
		return exitFindings
	}
	return exitOK
}

// recommend computes the report. Errors are invalid input.
func recommend(o recommendOpts) (recommendation, error) {
	var r recommendation
	if o.cpus < 1 {
		return r, fmt.Errorf("--cpus %d: want at least 1", o.cpus)
	}
	for name, v := range map[string]uint64{"--index-memory": o.indexMiB, "--block-map-cache": o.cacheMiB, "--slab-size": o.slab} {
		if v%(1<<20) != 0 {
			return r, fmt.Errorf("%s %s: not a whole number of MiB", name, units.FormatSize(v))
		}
	}
	if o.slab < 128<<20 || o.slab > 32<<30 {
		return r, fmt.Errorf("--slab-size %s: LVM accepts 128M..32G", units.FormatSize(o.slab))
	}
	if o.cacheMiB < 128<<20 {
		return r, fmt.Errorf("--block-map-cache %s: LVM's minimum is 128M", units.FormatSize(o.cacheMiB))
	}
	if o.extent == 0 || o.extent%vdo.BlockSize != 0 {
		return r, fmt.Errorf("--extent-size %s: not a positive multiple of 4K", units.FormatSize(o.extent))
	}
	if o.size%o.extent != 0 {
		return r, fmt.Errorf("--size %s: not a whole number of %s extents (LVM would round it up to %s)",
			units.FormatSize(o.size), units.FormatSize(o.extent), vdo.LVMSize((o.size/o.extent+1)*o.extent))
	}
	if o.grow != 0 && !o.split {
		return r, errors.New("--grow plans a split pool; add --split")
	}
	p := vdo.Pool{
		VG: o.vg, Pool: o.pool, LV: o.lv,
		PhysicalBytes: o.size, SlabBytes: o.slab, IndexMemoryMiB: o.indexMiB >> 20, Sparse: o.sparse,
		BlockMapCacheMiB: o.cacheMiB >> 20, MaxDiscardBlocks: o.maxDiscard,
		Compression: o.compression, Deduplication: o.dedupe,
	}
	g, err := p.Geometry()
	if err != nil {
		return r, err
	}
	l, err := vdo.NewLayout(g)
	if err != nil {
		return r, err
	}
	in := &r.Input
	in.CPUs, in.SizeBytes, in.SlabBytes, in.IndexMemoryMiB = o.cpus, o.size, o.slab, p.IndexMemoryMiB
	in.IndexSetting, in.Sparse, in.BlockMapCacheMiB, in.ExtentBytes = g.IndexMemory.String(), o.sparse, p.BlockMapCacheMiB, o.extent
	r.Layout, r.CapacityLines = l, l.CapacityLines()

	c := &r.Capacity
	c.AddressableBytes, c.DataBlocks = l.AddressableBytes(), l.DataBlocks()
	c.MaxThickLogicalBlocks, c.MaxThickVirtualBytes = l.MaxThickLogicalBlocks(), l.MaxThickVirtualBytes(o.extent)
	c.UnusedBytes = l.Unused.Count * vdo.BlockSize
	c.SameSlabsBytes = ceilTo(l.ZeroWasteBlocks()*vdo.BlockSize, o.extent)
	c.NextSlabBytes = ceilTo(l.NextSlabBlocks()*vdo.BlockSize, o.extent)
	virtual := o.virtual
	if virtual == 0 {
		virtual = c.MaxThickVirtualBytes
		if virtual == 0 {
			return r, fmt.Errorf("--size %s: the pool holds no whole extent thick", units.FormatSize(o.size))
		}
	}
	if vdo.VirtualBlocks(virtual) > vdo.MaxLogicalBlocks {
		return r, fmt.Errorf("--virtual-size %s: above VDO's 4 PiB logical maximum", units.FormatSize(virtual))
	}
	in.VirtualBytes = virtual
	p.VirtualBytes = virtual
	c.VirtualFitsThick = l.FitsThick(vdo.VirtualBlocks(virtual))
	c.BlockMapPages = vdo.BlockMapPages(vdo.VirtualBlocks(virtual))
	if !c.VirtualFitsThick && !o.overcommit {
		r.Problems = append(r.Problems, fmt.Sprintf("--virtual-size %s is above the %s this pool holds thick: written end to end with data VDO cannot reduce, it runs out of space (add --overcommit if that is intended)",
			units.FormatSize(virtual), units.FormatSize(c.MaxThickVirtualBytes)))
	}

	r.RAM = vdo.RAMBill(o.size, virtual, p.BlockMapCacheMiB, p.IndexMemoryMiB)
	r.RAMTotalMiB = r.RAM.TotalMiB()
	r.NodeMemAvailableMiB = o.nodeMemAvailable >> 20
	if o.nodeMemAvailable != 0 && r.RAMTotalMiB > r.NodeMemAvailableMiB {
		r.Problems = append(r.Problems, fmt.Sprintf("the pool needs %d MiB of RAM and the node has %d MiB available: LVM will refuse to create it",
			r.RAMTotalMiB, r.NodeMemAvailableMiB))
	}
	r.DedupeWindow = vdo.DedupeWindowBytes(g.IndexMemory, o.sparse)
	r.Threads = vdo.AutoThreadsCache(o.cpus, l.Slabs, p.BlockMapCacheMiB*256)
	p.Threads = r.Threads
	if len(r.Problems) == 0 {
		r.LVCreate = p.LVCreateArgs()
	}

	if o.split {
		s, err := l.Split(o.extent)
		if err != nil {
			return r, err
		}
		r.Split = &s
		if len(r.Problems) == 0 {
			r.SplitCmds = p.SplitCreateArgs(s, o.fast, o.slow)
		}
		if o.grow != 0 {
			gp, err := l.PlanSplitGrow(o.grow, o.extent)
			if err != nil {
				return r, err
			}
			r.Grow = &gp
			if len(r.Problems) == 0 {
				r.GrowCmds = p.GrowArgs(gp, o.fast, o.slow)
			}
		}
	}
	return r, nil
}

func ceilTo(n, m uint64) uint64 { return (n + m - 1) / m * m }

// writeRecommendation prints the report for operators.
func writeRecommendation(w io.Writer, r recommendation) error {
	var b strings.Builder
	l, c, in := r.Layout, r.Capacity, r.Input
	sz := units.FormatSize
	blocks := func(n uint64) string { return fmt.Sprintf("%d blocks, %s", n, sz(n*vdo.BlockSize)) }
	kind := "dense"
	if in.Sparse {
		kind = "sparse"
	}
	fmt.Fprintf(&b, "VDO pool of %s (%d 4K blocks), %s slabs, %s index of %d MiB (vdoformat --uds-memory-size=%s)\n\n",
		sz(in.SizeBytes), l.PhysicalBlocks, sz(in.SlabBytes), kind, in.IndexMemoryMiB, in.IndexSetting)

	fmt.Fprintln(&b, "Layout (4K blocks from the start of the pool's data LV):")
	row := func(name string, rg vdo.Range, note string) {
		fmt.Fprintf(&b, "  %-18s %10d .. %-10d %s\n", name, rg.First, rg.Last, note)
	}
	row("geometry block", l.GeometryBlock, "1 block")
	row("UDS index", l.Index, blocks(l.Index.Count))
	row("super block", l.SuperBlock, "1 block")
	row("block-map roots", l.BlockMapRoots, "60 blocks")
	slabs := vdo.Range{First: l.DepotStart, Last: l.DepotStart + l.Slabs*l.Slab.Blocks - 1, Count: l.Slabs * l.Slab.Blocks}
	row("slabs", slabs, fmt.Sprintf("%d x %d (%d data, %d refcount, %d journal)",
		l.Slabs, l.Slab.Blocks, l.Slab.DataBlocks, l.Slab.RefCountBlocks, l.Slab.JournalBlocks))
	if l.Unused.Count > 0 {
		row("unused", l.Unused, blocks(l.Unused.Count)+", too small for another slab")
	} else {
		fmt.Fprintf(&b, "  %-18s %10s    %-10s %s\n", "unused", "-", "", "none")
	}
	row("recovery journal", l.RecoveryJournal, blocks(l.RecoveryJournal.Count))
	row("slab summary", l.SlabSummary, blocks(l.SlabSummary.Count))

	fmt.Fprintln(&b, "\nvdoformat will print:")
	for _, s := range r.CapacityLines {
		fmt.Fprintf(&b, "  %s\n", s)
	}

	fmt.Fprintln(&b, "\nCapacity:")
	fmt.Fprintf(&b, "  addressable          %s in %d slabs (%d data blocks after slab metadata)\n", sz(c.AddressableBytes), l.Slabs, c.DataBlocks)
	fmt.Fprintf(&b, "  largest thick -V     %s (%s): logical blocks + block-map pages fit in the data blocks\n",
		sz(c.MaxThickVirtualBytes), vdo.LVMSize(c.MaxThickVirtualBytes))
	fit := "fits thick"
	if !c.VirtualFitsThick {
		fit = "ABOVE the thick limit (overcommitted)"
	}
	fmt.Fprintf(&b, "  virtual size         %s: %s, %d block-map pages when fully written\n", sz(in.VirtualBytes), fit, c.BlockMapPages)
	if l.Unused.Count > 0 {
		fmt.Fprintf(&b, "  unused remainder     %s; -L %s wastes under one extent with the same %d slabs, -L %s gives %d\n",
			sz(c.UnusedBytes), vdo.LVMSize(c.SameSlabsBytes), l.Slabs, vdo.LVMSize(c.NextSlabBytes), l.Slabs+1)
	} else {
		fmt.Fprintf(&b, "  unused remainder     none; -L %s gives %d slabs\n", vdo.LVMSize(c.NextSlabBytes), l.Slabs+1)
	}

	fmt.Fprintln(&b, "\nRAM LVM requires (lvmvdo(7), LVM's rounding), MiB:")
	fmt.Fprintf(&b, "  fixed                %6d\n", r.RAM.FixedMiB)
	fmt.Fprintf(&b, "  block map cache      %6d  (%d MiB cache x 1.15, at least 150)\n", r.RAM.BlockMapCacheMiB, in.BlockMapCacheMiB)
	fmt.Fprintf(&b, "  logical space        %6d  (1.6 per started TiB of virtual size)\n", r.RAM.LogicalMiB)
	fmt.Fprintf(&b, "  physical space       %6d  (268 per TiB of pool)\n", r.RAM.PhysicalMiB)
	fmt.Fprintf(&b, "  UDS index            %6d\n", r.RAM.IndexMiB)
	fmt.Fprintf(&b, "  total                %6d\n", r.RAMTotalMiB)
	if r.NodeMemAvailableMiB != 0 {
		fmt.Fprintf(&b, "  node available       %6d  (MemAvailable in the node snapshot; LVM checks free memory before creating)\n", r.NodeMemAvailableMiB)
	}
	fmt.Fprintf(&b, "\nDedupe window: %s (%s index: 1 TiB per GiB of index memory", sz(r.DedupeWindow), kind)
	if in.Sparse {
		b.WriteString(" x 10")
	}
	b.WriteString(")\n")

	t := r.Threads
	fmt.Fprintf(&b, "\nThreads for %d CPUs: logical %d, physical %d, hash %d, cpu %d, bio %d, ack %d (%d; LVM default is 1,1,1,2,4,1)\n",
		in.CPUs, t.Logical, t.Physical, t.Hash, t.CPU, t.Bio, t.Ack, t.Total())

	if len(r.Problems) > 0 {
		// A pool keel refuses gets no command to paste, only the reasons
		// (the same lines go to stderr and the exit status is 1).
		fmt.Fprintln(&b, "\nCreate: refused, nothing to paste:")
		for _, p := range r.Problems {
			fmt.Fprintf(&b, "  %s\n", p)
		}
	} else {
		fmt.Fprintln(&b, "\nCreate (one command, LVM picks the PVs):")
		fmt.Fprintf(&b, "  %s\n", shell.Join(r.LVCreate))
	}
	if r.Split != nil {
		s := r.Split
		fmt.Fprintf(&b, "\nSplit pool (%s extents of %d blocks, %d extents):\n", sz(s.ExtentBytes), s.ExtentBlocks, s.TotalExtents)
		fmt.Fprintf(&b, "  head    LE %6d .. %-6d %5d extents  fast PV: geometry, index, super block, roots\n", s.Head.First, s.Head.Last, s.Head.Count)
		fmt.Fprintf(&b, "  middle  LE %6d .. %-6d %5d extents  slow PV: the slabs\n", s.Middle.First, s.Middle.Last, s.Middle.Count)
		fmt.Fprintf(&b, "  tail    LE %6d .. %-6d %5d extents  fast PV: recovery journal, slab summary\n", s.Tail.First, s.Tail.Last, s.Tail.Count)
		for _, cmd := range r.SplitCmds {
			fmt.Fprintf(&b, "  %s\n", shell.Join(cmd))
		}
	}
	if r.Grow != nil {
		g := r.Grow
		fmt.Fprintf(&b, "\nGrow by %s (adds %s; every extend is at least %s, one slab):\n", sz(g.RequestedBytes), sz(g.AddedBytes), sz(g.MinStepBytes))
		for _, cmd := range r.GrowCmds {
			fmt.Fprintf(&b, "  %s\n", shell.Join(cmd))
		}
		fmt.Fprintf(&b, "  afterwards: %d slabs, journal and summary in LE %d .. %d, on the fast PV\n", g.After.Slabs, g.Tail.First, g.Tail.Last)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
