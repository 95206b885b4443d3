package schema

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"cuelang.org/go/cue"

	"github.com/keel-storage/keel/lvm/units"
	"github.com/keel-storage/keel/schema/spec"
)

// check runs the checks CUE cannot express on a desired state that passed
// the schema. Every problem carries the position of the offending field.
func check(d *Desired) []Problem {
	c := &checker{d: d, cfg: d.Config}
	c.sizes()
	c.filters()
	c.names()
	c.stacking()
	c.raid()
	c.split()
	c.vdoGeometry()
	c.waivers()
	c.holds()
	return c.problems
}

// holds checks each hold's until date and that no object is held twice.
func (c *checker) holds() {
	seen := map[string]bool{}
	for i, h := range c.cfg.Holds {
		if _, err := time.Parse(time.DateOnly, h.Until); h.Until != "" && err != nil {
			c.at("hold", fmt.Sprintf("until %q is not a date (YYYY-MM-DD)", h.Until), "holds", i, "until")
		}
		if seen[h.Object] {
			c.at("hold", fmt.Sprintf("a second hold on %s", h.Object), "holds", i)
		}
		seen[h.Object] = true
	}
}

// waivers checks each waiver's date and that no two waive the same finding.
func (c *checker) waivers() {
	seen := map[string]bool{}
	for i, w := range c.cfg.Waivers {
		if _, err := time.Parse(time.DateOnly, w.Expires); err != nil {
			c.at("waiver", fmt.Sprintf("expires %q is not a date (YYYY-MM-DD)", w.Expires), "waivers", i, "expires")
		}
		key := w.ID + "@" + w.Object
		if seen[key] {
			c.at("waiver", fmt.Sprintf("a second waiver for %s on %s", w.ID, w.Object), "waivers", i)
		}
		seen[key] = true
	}
}

// checker collects the problems of one desired state.
type checker struct {
	d        *Desired
	cfg      *spec.Config
	problems []Problem
}

// at records a problem found by the named check at the field whose path is
// given as labels (strings) and list indexes (ints).
func (c *checker) at(check string, msg string, path ...any) {
	sels := make([]cue.Selector, len(path))
	shown := make([]string, len(path))
	for i, p := range path {
		switch p := p.(type) {
		case int:
			sels[i] = cue.Index(p)
			shown[i] = strconv.Itoa(p)
		case string:
			sels[i] = cue.Str(p)
			shown[i] = sels[i].String()
		default:
			panic(fmt.Sprintf("schema: path element %T", p))
		}
	}
	pos := userPos(c.d.Value, cue.MakePath(sels...).String(), c.d.Files)
	c.problems = append(c.problems, Problem{Pos: pos, Path: strings.Join(shown, "."), Msg: msg, Check: check})
}

// size checks a size field that is set: it must parse and be non-zero
// (a zero strip or chunk size would divide by zero further on). A size
// keel hands to LVM must also be a whole number of 512-byte sectors.
func (c *checker) size(s units.Size, lvm bool, path ...any) {
	if !s.IsSet() {
		return
	}
	if err := s.Err(); err != nil {
		c.at("size", err.Error(), path...) // names the text already
		return
	}
	var err error
	switch {
	case lvm:
		err = units.CheckLVMSize(s.Bytes)
	case s.Bytes == 0:
		err = fmt.Errorf("size is zero: %w", units.ErrSize)
	}
	if err != nil {
		c.at("size", fmt.Sprintf("size %q: %v", s.Text, err), path...)
	}
}

// sizes checks every size field (the schema's regex admits numbers too
// large for 64 bits, zero, and sizes below a sector).
func (c *checker) sizes() {
	for _, vg := range slices.Sorted(maps.Keys(c.cfg.VolumeGroups)) {
		g := c.cfg.VolumeGroups[vg]
		for _, name := range slices.Sorted(maps.Keys(g.VDOPools)) {
			p := g.VDOPools[name]
			base := []any{"volumeGroups", vg, "vdoPools", name}
			for _, f := range []struct {
				field string
				v     units.Size
				lvm   bool // handed to lvcreate as a size argument
			}{
				{"size", p.Size, true}, {"virtualSize", p.VirtualSize, true}, {"slabSize", p.SlabSize, false},
				{"indexMemory", p.IndexMemory, false}, {"maxDiscard", p.MaxDiscard, false}, {"blockMapCache", p.BlockMapCache, false},
			} {
				c.size(f.v, f.lvm, append(base, f.field)...)
			}
			c.autoextend(p.Autoextend, p.Size, base)
		}
		for _, name := range slices.Sorted(maps.Keys(g.ThinPools)) {
			p := g.ThinPools[name]
			base := []any{"volumeGroups", vg, "thinPools", name}
			for _, f := range []struct {
				field string
				v     units.Size
			}{
				{"size", p.Size}, {"chunkSize", p.ChunkSize}, {"metadataSize", p.MetadataSize},
			} {
				c.size(f.v, true, append(base, f.field)...)
			}
			if p.RAID != nil {
				c.size(p.RAID.StripeSize, false, append(base, "raid", "stripeSize")...)
			}
			c.autoextend(p.Autoextend, p.Size, base)
		}
	}
	c.size(units.NewSize(c.cfg.Removal.Step), false, "removal", "step")
	for _, name := range slices.Sorted(maps.Keys(c.cfg.Bcache)) {
		if err := c.cfg.Bcache[name].CutoffErr(); err != nil {
			c.at("sizes", err.Error(), "bcache", name, "sequentialCutoff")
		}
	}
}

// autoextend checks a pool's autoextend maximum: a size LVM takes, and
// not below the pool's declared size, which is where the pool starts.
func (c *checker) autoextend(a *spec.Autoextend, size units.Size, base []any) {
	if a == nil {
		return
	}
	path := append(slices.Clone(base), "autoextend", "maximum")
	c.size(a.Maximum, true, path...)
	if a.Maximum.Err() == nil && size.IsSet() && size.Err() == nil && a.Maximum.Bytes < size.Bytes {
		c.at("sizes", fmt.Sprintf("autoextend maximum %s is below the pool's size %s: raise it to %s or more", a.Maximum.Text, size.Text, size.Text), path...)
	}
}

// names checks that LV names are unique within a VG, that an LV listed as
// absent is not also declared, and that no device is used twice.
func (c *checker) names() {
	pvOwner := map[string]string{}
	for _, vg := range slices.Sorted(maps.Keys(c.cfg.VolumeGroups)) {
		g := c.cfg.VolumeGroups[vg]
		declared := map[string]string{} // LV name -> what declares it
		claim := func(lv, what string, path ...any) {
			if prev, ok := declared[lv]; ok {
				c.at("names", fmt.Sprintf("vg %s: lv %s is declared twice (%s and %s)", vg, lv, prev, what), path...)
				return
			}
			declared[lv] = what
		}
		for _, name := range slices.Sorted(maps.Keys(g.VDOPools)) {
			claim(name, "vdo pool "+name, "volumeGroups", vg, "vdoPools", name)
			claim(g.VDOPools[name].LV, "the vdo lv of pool "+name, "volumeGroups", vg, "vdoPools", name, "lv")
		}
		for _, name := range slices.Sorted(maps.Keys(g.ThinPools)) {
			claim(name, "thin pool "+name, "volumeGroups", vg, "thinPools", name)
		}
		for i, a := range g.Absent {
			lv := a.Name
			if what, ok := declared[lv]; ok {
				c.at("names", fmt.Sprintf("vg %s: lv %s is listed as absent but declared as %s", vg, lv, what),
					"volumeGroups", vg, "absent", i)
			}
		}
		for i, pv := range g.PVs {
			if prev, ok := pvOwner[pv]; ok {
				c.at("names", fmt.Sprintf("vg %s: pv %s is already a pv of vg %s", vg, pv, prev),
					"volumeGroups", vg, "pvs", i)
				continue
			}
			pvOwner[pv] = vg
		}
	}
	backing := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(c.cfg.Bcache)) {
		b := c.cfg.Bcache[name].Backing
		if prev, ok := backing[b]; ok {
			c.at("names", fmt.Sprintf("bcache %s: backing device %s is already the backing device of %s", name, b, prev),
				"bcache", name, "backing")
			continue
		}
		backing[b] = name
	}
}

// devDirs are the directories under /dev that udev and the kernel populate;
// any other /dev/<x>/<y> is an LV path (/dev/<vg>/<lv>).
var devDirs = map[string]bool{
	"disk": true, "mapper": true, "bcache": true, "md": true, "block": true, "char": true,
	"bus": true, "cpu": true, "dri": true, "input": true, "net": true, "pts": true,
	"shm": true, "snd": true, "vfio": true, "hugepages": true, "mqueue": true, "zvol": true,
	"rbd": true, "vdo": true, "dm": true, "lvm": true,
}

// lvOfPath returns the VG and LV a PV path names when it is an LV path:
// /dev/<vg>/<lv> or /dev/mapper/<vg>-<lv> (dashes in names doubled).
func lvOfPath(p string) (vg, lv string, ok bool) {
	rest, found := strings.CutPrefix(p, "/dev/")
	if !found {
		return "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) == 2 && parts[0] == "mapper" {
		// Split at the first single dash.
		name := parts[1]
		for i := 0; i < len(name); i++ {
			if name[i] != '-' {
				continue
			}
			if i+1 < len(name) && name[i+1] == '-' {
				i++
				continue
			}
			vg = strings.ReplaceAll(name[:i], "--", "-")
			lv = strings.ReplaceAll(name[i+1:], "--", "-")
			return vg, lv, vg != "" && lv != ""
		}
		return "", "", false
	}
	if len(parts) == 2 && !devDirs[parts[0]] {
		return parts[0], parts[1], true
	}
	return "", "", false
}

// stacking checks VGs stacked on LVs: the LV must be a declared VDO LV (or
// VDO pool) of a declared VG, and a VG on VDO must not hold a thin pool
// (two thin layers: VDO already overcommits or must be kept thick).
func (c *checker) stacking() {
	for _, vg := range slices.Sorted(maps.Keys(c.cfg.VolumeGroups)) {
		g := c.cfg.VolumeGroups[vg]
		onVDO := ""
		for i, pv := range g.PVs {
			lowerVG, lv, ok := lvOfPath(pv)
			if !ok {
				continue
			}
			lower, declared := c.cfg.VolumeGroups[lowerVG]
			isMapper := strings.HasPrefix(pv, "/dev/mapper/")
			if !declared {
				if isMapper {
					continue // some other device-mapper device (crypt, multipath)
				}
				c.at("stacking", fmt.Sprintf("vg %s: pv %s is an lv path, but no volume group %s is declared", vg, pv, lowerVG),
					"volumeGroups", vg, "pvs", i)
				continue
			}
			if lowerVG == vg {
				c.at("stacking", fmt.Sprintf("vg %s: pv %s is an lv of the same vg", vg, pv), "volumeGroups", vg, "pvs", i)
				continue
			}
			found := false
			for _, name := range slices.Sorted(maps.Keys(lower.VDOPools)) {
				if lower.VDOPools[name].LV == lv || name == lv {
					found = true
					onVDO = lowerVG + "/" + lv
				}
			}
			if !found {
				c.at("stacking", fmt.Sprintf("vg %s: pv %s: vg %s declares no vdo lv or pool %s", vg, pv, lowerVG, lv),
					"volumeGroups", vg, "pvs", i)
			}
		}
		if onVDO == "" {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(g.ThinPools)) {
			c.at("stacking", fmt.Sprintf("vg %s: thin pool %s on vdo lv %s: two thin layers (VDO below already provisions thinly); keep the VG on VDO thick", vg, name, onVDO),
				"volumeGroups", vg, "thinPools", name)
		}
	}
}

// raid checks that a thin pool's chunk covers whole RAID stripes.
func (c *checker) raid() {
	for _, vg := range slices.Sorted(maps.Keys(c.cfg.VolumeGroups)) {
		g := c.cfg.VolumeGroups[vg]
		for _, name := range slices.Sorted(maps.Keys(g.ThinPools)) {
			p := g.ThinPools[name]
			if p.RAID == nil {
				continue
			}
			chunk, strip, disks := p.ChunkSize.Bytes, p.RAID.StripeSize.Bytes, uint64(p.RAID.DataDisks)
			if p.ChunkSize.Err() != nil || strip == 0 || disks == 0 || chunk == 0 {
				continue // reported by sizes and the schema
			}
			if strip > math.MaxUint64/disks {
				c.at("raid", fmt.Sprintf("thin pool %s/%s: a RAID stripe of %s x %d data disks exceeds 16 EiB", vg, name, p.RAID.StripeSize, p.RAID.DataDisks),
					"volumeGroups", vg, "thinPools", name, "raid")
				continue
			}
			stripe := strip * disks
			if chunk%stripe != 0 {
				c.at("raid", fmt.Sprintf("thin pool %s/%s: chunk size %s does not cover whole RAID stripes of %s (%s x %d data disks); use %s",
					vg, name, p.ChunkSize, units.FormatSize(stripe), p.RAID.StripeSize, p.RAID.DataDisks, units.FormatSize(roundUp(chunk, stripe))),
					"volumeGroups", vg, "thinPools", name, "chunkSize")
			}
		}
	}
}

// roundUp rounds n up to a multiple of m (m > 0), saturating below 2^64.
func roundUp(n, m uint64) uint64 {
	if n < m {
		return m
	}
	if r := n % m; r != 0 {
		if n > math.MaxUint64-(m-r) {
			return n - r
		}
		return n + m - r
	}
	return n
}

// split checks that a split pool's fast PVs are PVs of its VG and leave at
// least one slow PV for the slabs.
func (c *checker) split() {
	for _, vg := range slices.Sorted(maps.Keys(c.cfg.VolumeGroups)) {
		g := c.cfg.VolumeGroups[vg]
		for _, name := range slices.Sorted(maps.Keys(g.VDOPools)) {
			s := g.VDOPools[name].Split
			if s == nil {
				continue
			}
			fast := map[string]bool{}
			for i, f := range s.Fast {
				fast[f] = true
				if !slices.Contains(g.PVs, f) {
					c.at("split", fmt.Sprintf("vdo pool %s/%s: fast pv %s is not a pv of vg %s", vg, name, f, vg),
						"volumeGroups", vg, "vdoPools", name, "split", "fast", i)
				}
			}
			slow := 0
			for _, pv := range g.PVs {
				if !fast[pv] {
					slow++
				}
			}
			if slow == 0 {
				c.at("split", fmt.Sprintf("vdo pool %s/%s: every pv of vg %s is fast; a split pool needs a slow pv for its slabs", vg, name, vg),
					"volumeGroups", vg, "vdoPools", name, "split")
			}
		}
	}
}
