package plan

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/keel-storage/keel/lvm/units"
	"github.com/keel-storage/keel/lvm/vdo"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/schema"
	"github.com/keel-storage/keel/schema/spec"
)

func actionOf(r Result, id string) *Action {
	for i := range r.Actions {
		if r.Actions[i].ID == id {
			return &r.Actions[i]
		}
	}
	return nil
}

func size(t *testing.T, text string) units.Size {
	t.Helper()
	n, err := units.ParseSize(text)
	if err != nil {
		t.Fatal(err)
	}
	return units.Size{Text: text, Bytes: n}
}

// planVDODeclared replays snapshot against desired with pool "vg/pool"
// changed by edit, and returns the host, the pool as declared and the plan.
func planVDODeclared(t *testing.T, snapshot, desired, vg, pool string, edit func(*spec.VDOPool)) (*model.Host, spec.VDOPool, Result) {
	t.Helper()
	h := replayHost(t, snapshot)
	d := loadDesired(t, desired, h)
	want := d.VolumeGroups[vg].VDOPools[pool]
	edit(&want)
	d.VolumeGroups[vg].VDOPools[pool] = want
	return h, want, Plan(d, h)
}

// TestGrowFromCapture replays the capture of e2e/sizes/grow.sh before keel
// ran: the thin pool at half its declared size, the loop device grown under
// its PV and the declared PV not in the VG each give a finding and a live
// action, the VG's growth running before the pool's.
func TestGrowFromCapture(t *testing.T) {
	h := replayHost(t, "sizes-grow")
	r := Plan(loadDesired(t, "sizes-grow", h), h)
	want := map[string][][]string{
		"vg.extend:sizevg":       {{"pvcreate", "/dev/disk/by-id/virtio-data2"}, {"vgextend", "sizevg", "/dev/disk/by-id/virtio-data2"}},
		"vg.pv_grown:/dev/loop0": {{"pvresize", "/dev/loop0"}},
		"thin.size:sizevg/tp":    {{"lvextend", "-L", "128M", "sizevg/tp"}},
	}
	var order []string
	for _, a := range r.Actions {
		if cmds, ok := want[a.ID]; ok {
			order = append(order, a.ID)
			if !slices.EqualFunc(a.Commands, cmds, slices.Equal) || a.Class != Live {
				t.Errorf("%s: %s %q, want live %q", a.ID, a.Class, a.Commands, cmds)
			}
		}
	}
	if len(order) != 3 || order[2] != "thin.size:sizevg/tp" {
		t.Errorf("grow actions %v, want all three with the pool's last", order)
	}
	for _, k := range []string{"thin.size@sizevg/tp", "vg.pv_grown@/dev/loop0", "vg.pv_not_in_vg@sizevg"} {
		if findingOf(r, k) == nil {
			t.Errorf("no finding %s in %q", k, keys(r.Findings))
		}
	}
	if f := findingOf(r, "vg.pvs_drift@sizevg"); f != nil {
		t.Errorf("a declared PV to add is reported as drift: %+v", f)
	}
}

// TestThinSizeDeclared replays the thin capture (tp of 8G) with declared
// sizes above and below: below, a grow in LVM's rounding; above, a finding
// and no action; a grow the VG has no room for, a finding naming the room.
func TestThinSizeDeclared(t *testing.T) {
	h := replayHost(t, "thin")
	tp := h.ThinPools["thinvg/tp"]
	if tp == nil {
		t.Fatal("capture has no thinvg/tp")
	}
	free := h.VGs["thinvg"].Free
	for _, c := range []struct {
		declared string
		grow     bool
		finding  string // in the finding's message
	}{
		{units.LVMArg(tp.DataSize), false, ""},
		{units.LVMArg(tp.DataSize - 1<<20), false, ""}, // rounds up to the same extents
		{units.LVMArg(tp.DataSize + 1<<30), true, "below its declared"},
		{units.LVMArg(tp.DataSize / 2), false, "above its declared"},
		{units.LVMArg(tp.DataSize + free + 1<<30), false, "free of the"},
	} {
		d := loadDesired(t, "thin", h)
		want := d.VolumeGroups["thinvg"].ThinPools["tp"]
		want.Size = size(t, c.declared)
		d.VolumeGroups["thinvg"].ThinPools["tp"] = want
		r := Plan(d, h)
		f := findingOf(r, "thin.size@thinvg/tp")
		if (f == nil) != (c.finding == "") || (f != nil && !strings.Contains(f.Message, c.finding)) {
			t.Errorf("declared %s against %s: finding %+v, want %q", c.declared, units.FormatSize(tp.DataSize), f, c.finding)
		}
		a := actionOf(r, "thin.size:thinvg/tp")
		if (a != nil) != c.grow || (a != nil && !slices.Equal(a.Commands[0], []string{"lvextend", "-L", c.declared, "thinvg/tp"})) {
			t.Errorf("declared %s: action %+v, want grow %v", c.declared, a, c.grow)
		}
	}
}

// TestVDOSizeDeclared replays the vdo-thick capture (pool 40G, VDO LV 35G)
// declared 80G/20G: the pool is below (grown, or reported when the VG has
// no room), the VDO LV above (reported, never reduced).
func TestVDOSizeDeclared(t *testing.T) {
	h, _, r := planVDODeclared(t, "vdo-thick", "vdo-thick", "vdolab", "vdopool", func(w *spec.VDOPool) {
		w.Size, w.VirtualSize = size(t, "80G"), size(t, "20G")
	})
	if f := findingOf(r, "vdo.virtual_size@vdolab/vdolv"); f == nil || !strings.Contains(f.Message, "above") {
		t.Errorf("virtual size above: %+v", f)
	}
	f := findingOf(r, "vdo.size@vdolab/vdopool")
	if f == nil || !strings.Contains(f.Message, "below its declared size 80G") {
		t.Fatalf("pool below: %+v", f)
	}
	a := actionOf(r, "vdo.size:vdolab/vdopool")
	if h.VGs["vdolab"].Free >= 40<<30 {
		if a == nil || !slices.Equal(a.Commands[0], []string{"lvextend", "-L", "80G", "vdolab/vdopool"}) {
			t.Errorf("pool grow %+v", a)
		}
	} else if a != nil || !strings.Contains(f.Remedy, "vgextend") {
		t.Errorf("no room in vdolab: action %+v, remedy %q", a, f.Remedy)
	}
	for _, a := range r.Actions {
		for _, c := range a.Commands {
			if c[0] == "lvreduce" || c[0] == "vgreduce" || c[0] == "pvmove" {
				t.Errorf("action %s runs %q", a.ID, c)
			}
		}
	}
}

// TestSplitVDOGrowSteps replays the split pool (13G) declared 20G: the grow
// is keel recommend --grow's steps, slow PVs first and the fast PV last.
func TestSplitVDOGrowSteps(t *testing.T) {
	h, want, r := planVDODeclared(t, "vdo-split", "vdo-split", "vdosplit", "pool", func(w *spec.VDOPool) { w.Size = size(t, "20G") })
	a := actionOf(r, "vdo.size:vdosplit/pool")
	if a == nil {
		t.Fatalf("no split grow in %q", keys(r.Findings))
	}
	o := newPlanner(h).observeVDO(h.VDOPools["vdosplit/pool"], "vdolv")
	gp, err := o.layout.PlanSplitGrow(20<<30-h.LVs["vdosplit/pool"].Size, o.extent)
	if err != nil {
		t.Fatal(err)
	}
	fast := want.Split.Fast
	slow := []string{"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd1"}
	exp := vdo.Pool{VG: "vdosplit", Pool: "pool"}.GrowArgs(gp, fast, slow)
	if !slices.EqualFunc(a.Commands, exp, slices.Equal) {
		t.Errorf("split grow %q, want recommend's %q", a.Commands, exp)
	}
	last := a.Commands[len(a.Commands)-1]
	if !slices.Equal(last[len(last)-len(fast):], fast) {
		t.Errorf("last step %q does not allocate on the fast PVs", last)
	}
}

// TestDroppedPVOnlyReported declares the split pool's VG on its fast PV
// only: the slow PV is vg.pvs_drift, and nothing reduces the VG.
func TestDroppedPVOnlyReported(t *testing.T) {
	h := replayHost(t, "vdo-split")
	d := loadDesired(t, "vdo-split", h)
	vg := d.VolumeGroups["vdosplit"]
	vg.PVs = []string{"/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0"}
	d.VolumeGroups["vdosplit"] = vg
	r := Plan(d, h)
	if f := findingOf(r, "vg.pvs_drift@vdosplit"); f == nil || !strings.Contains(f.Message, "not declared") {
		t.Errorf("drift %+v in %q", f, keys(r.Findings))
	}
	for _, a := range r.Actions {
		for _, c := range a.Commands {
			if c[0] == "vgreduce" || c[0] == "pvmove" {
				t.Errorf("action %s runs %q", a.ID, c)
			}
		}
	}
}

// TestOvercommitRemedyKeepsDeclared replays examples/vdo-on-bcache, whose
// pool is 13G against its declared 40G and whose VDO LV (30G) is below its
// declared 35G: the vdo.overcommit remedy grows the pool to its declared
// size and never reduces the VDO LV.
func TestOvercommitRemedyKeepsDeclared(t *testing.T) {
	h := replayFile(t, "../../examples/nodes/vdo-on-bcache.txtar")
	d, err := schema.Load("../../examples/vdo-on-bcache.cue")
	if err != nil {
		t.Fatal(err)
	}
	r := Plan(d, h)
	f := findingOf(r, "vdo.overcommit@vdosplit/vdolv")
	if f == nil {
		t.Fatalf("no vdo.overcommit in %q", keys(r.Findings))
	}
	if strings.Contains(f.Remedy, "lvreduce") || !strings.Contains(f.Remedy, "declared size 40G") {
		t.Errorf("remedy %q moves away from the declared state", f.Remedy)
	}
	a := actionOf(r, "vdo.size:vdosplit/pool")
	if a == nil || !slices.Contains(a.Remedies, "vdo.virtual_size@vdosplit/vdolv") {
		t.Fatalf("pool grow %+v does not carry the VDO LV's", a)
	}
	if last := a.Commands[len(a.Commands)-1]; !slices.Equal(last, []string{"lvextend", "-L", "35G", "vdosplit/vdolv"}) {
		t.Errorf("the VDO LV grows in %q, want after the pool", a.Commands)
	}
}

// TestVGPVsOnlyReported replays the sizes-grow capture: the PV on data1,
// whose disk did not grow, is left alone, and a declared disk the host does
// not have is a finding without a vgextend.
func TestVGPVsOnlyReported(t *testing.T) {
	h := replayHost(t, "sizes-grow")
	d := loadDesired(t, "sizes-grow", h)
	vg := d.VolumeGroups["sizevg"]
	vg.PVs = []string{"/dev/disk/by-id/virtio-data1", "/dev/loop0", "/dev/disk/by-id/virtio-nosuch"}
	d.VolumeGroups["sizevg"] = vg
	r := Plan(d, h)
	for _, f := range r.Findings {
		if f.ID == VGPVGrown && f.Object != "/dev/loop0" {
			t.Errorf("a PV whose disk did not grow: %+v", f)
		}
	}
	if f := findingOf(r, "vg.pv_not_in_vg@sizevg"); f == nil || !strings.Contains(f.Message, "not on this host") {
		t.Errorf("missing disk: %+v", f)
	}
	if a := actionOf(r, "vg.extend:sizevg"); a != nil {
		t.Errorf("vgextend of a disk the host does not have: %+v", a)
	}
}

// TestOvercommitRemedyNamesPoolSize declares the vdo-defaults pool (20G,
// its VDO LV 40G) with a 30G virtual size it cannot hold thick: the remedy
// keeps 30G and names the smallest pool, in whole slabs, that holds it,
// checked against the layout arithmetic one slab below.
func TestOvercommitRemedyNamesPoolSize(t *testing.T) {
	h, _, r := planVDODeclared(t, "vdo-defaults", "vdo-defaults-overcommit", "vdodef", "vdopool", func(w *spec.VDOPool) {
		w.VirtualSize = size(t, "30G")
	})
	f := findingOf(r, "vdo.overcommit@vdodef/vdolv")
	if f == nil || strings.Contains(f.Remedy, "lvreduce") || !strings.Contains(f.Remedy, `declare size: "36G" for vdodef/vdopool`) {
		t.Fatalf("remedy %+v", f)
	}
	o := newPlanner(h).observeVDO(h.VDOPools["vdodef/vdopool"], "vdolv")
	for _, c := range []struct {
		pool  uint64
		holds bool
	}{{36 << 30, true}, {34 << 30, false}} {
		g := o.layout.Geometry
		g.PhysicalBytes = c.pool
		l, err := vdo.NewLayout(g)
		if err != nil {
			t.Fatal(err)
		}
		if got := l.MaxThickVirtualBytes(o.extent) >= 30<<30; got != c.holds {
			t.Errorf("a %s pool holds 30G thick: %v, want %v", units.FormatSize(c.pool), got, c.holds)
		}
	}
}

// TestThinOverprovisioned replays the thin capture (tp: 8G of data, thin
// LVs of 20G) against maxOverprovision declared around the observed 2.5:
// above it a finding whose remedy brings the ratio down to the maximum, in
// whole extents; at or below it none; the ratio is a level either way.
func TestThinOverprovisioned(t *testing.T) {
	h := replayHost(t, "thin")
	tp := h.ThinPools["thinvg/tp"]
	extent := h.VGs["thinvg"].ExtentSize
	for _, c := range []struct {
		name   string
		max    float64
		size   string
		remedy string // "" = no finding
	}{
		{"above, size not declared", 2, "", "lvextend -L 10G thinvg/tp"},
		{"above, uneven ratio rounds up to an extent", 3.0 / 2, "", "lvextend -L " + units.LVMArg(roundUpExtent(uint64(math.Ceil(20*float64(1<<30)/1.5)), extent)) + " thinvg/tp"},
		{"above, size declared", 2, "8G", `declare size: "10G" for thinvg/tp (keel grows it), or remove thin LVs from it`},
		{"at the maximum", 2.5, "", ""},
		{"below", 3, "", ""},
		{"not declared", 0, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := loadDesired(t, "thin-overprovisioned", h)
			want := d.VolumeGroups["thinvg"].ThinPools["tp"]
			want.MaxOverprovision = c.max
			if c.size != "" {
				want.Size = size(t, c.size)
			}
			d.VolumeGroups["thinvg"].ThinPools["tp"] = want
			r := Plan(d, h)
			f := findingOf(r, "thin.overprovisioned@thinvg/tp")
			switch {
			case c.remedy == "" && f != nil:
				t.Errorf("finding %+v, want none", f)
			case c.remedy != "" && f == nil:
				t.Fatalf("no finding in %q", keys(r.Findings))
			case c.remedy != "" && f.Remedy != c.remedy:
				t.Errorf("remedy %q, want %q", f.Remedy, c.remedy)
			}
			var lvl *Level
			for i := range r.Levels {
				if r.Levels[i].Kind == overprovisionKind && r.Levels[i].Object == "thinvg/tp" {
					lvl = &r.Levels[i]
				}
			}
			if lvl == nil || lvl.Ratio() != 2.5 || lvl.AlertRatio() != c.max {
				t.Errorf("level %+v, want ratio 2.5 and maximum %g (pool of %d bytes)", lvl, c.max, tp.DataSize)
			}
		})
	}
}

// TestSplitGrowFromCapture replays e2e/sizes/vdosplit.sh's capture: the
// split pool keel created at 4G (head 664 extents and tail 33 on the
// NVMe, 327 of slabs on the HDD), declared 5G. The grow is keel recommend
// --grow's: the slabs on the HDD first, then a new tail of the same 33
// extents on the NVMe, so the recovery journal, at the end, stays there.
func TestSplitGrowFromCapture(t *testing.T) {
	h := replayHost(t, "sizes-vdosplit-before")
	r := Plan(loadDesired(t, "sizes-vdosplit", h), h)
	a := actionOf(r, "vdo.size:svg/spool")
	want := [][]string{
		{"lvextend", "-l", "+223", "svg/spool", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_sslow"},
		{"lvextend", "-l", "+33", "svg/spool", "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_sfast"},
	}
	if a == nil || !slices.EqualFunc(a.Commands, want, slices.Equal) {
		t.Fatalf("action %+v, want %q", a, want)
	}
}
