package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/keel-storage/keel/lvm/units"
	"github.com/keel-storage/keel/lvm/vdo"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/probes/shell"
	"github.com/keel-storage/keel/schema/spec"
)

// Declared sizes after creation. keel compares the sizes it created a pool
// at with what LVM reports, in LVM's own granularity: lvm2 rounds every
// size argument up to a whole physical extent ("Rounding up size to full
// physical extent", extents_from_size in lib/metadata/metadata.c;
// lvcreate(8) and lvextend(8), -L), so a pool is at its declared size when
// its lv_size equals the declared size rounded up to the VG's extent. Below
// it, keel grows the LV live with lvextend (a pool never loses data by
// growing); above it, keel reports and never shrinks.

// roundUpExtent is n rounded up to a whole number of extents, as lvm2
// allocates it.
func roundUpExtent(n, extent uint64) uint64 {
	if extent == 0 {
		return n
	}
	return (n + extent - 1) / extent * extent
}

// vgExtent is the extent size of VG vg, or LVM's default when unknown.
func (p *planner) vgExtent(vg string) uint64 {
	if v := p.h.VGs[vg]; v != nil && v.ExtentSize > 0 {
		return v.ExtentSize
	}
	return defaultExtentBytes
}

// vgRoom reports whether VG vg has need bytes free for a grow, or gets more
// in this plan (a vgextend or a pvresize of it runs first, in an earlier
// phase): lvextend would only fail with "Insufficient free space".
func (p *planner) vgRoom(vg string, need uint64) bool {
	if v := p.h.VGs[vg]; v != nil && v.Free >= need {
		return true
	}
	for _, a := range p.actions {
		if a.Object == vg && (strings.HasPrefix(a.ID, "vg.extend:") || strings.HasPrefix(a.ID, "vg.pv_grown:")) {
			return true
		}
	}
	return false
}

// noRoom is the finding text of a grow the VG has no room for.
func (p *planner) noRoom(vg string, need uint64) (msg, remedy string) {
	free := uint64(0)
	if v := p.h.VGs[vg]; v != nil {
		free = v.Free
	}
	return fmt.Sprintf("; VG %s has %s free of the %s the grow needs", vg, units.FormatSize(free), units.FormatSize(need)),
		fmt.Sprintf("give VG %s room: declare another blank PV in its pvs (keel runs vgextend), or grow a disk under it (keel runs pvresize)", vg)
}

// planThinSize compares the data size of thin pool object with its declared
// size. lvextend of a thin pool grows its _tdata sub-LV live (lvmthin(7),
// "Manually manage free data space of thin pool LV").
func (p *planner) planThinSize(object string, tp *model.ThinPool, want spec.ThinPool) {
	if !want.Size.IsSet() || want.Size.Bytes == 0 || tp.DataSize == 0 {
		return
	}
	extent := p.vgExtent(tp.VG)
	wantBytes := roundUpExtent(want.Size.Bytes, extent)
	switch {
	case tp.DataSize < wantBytes:
		grow := []string{"lvextend", "-L", want.Size.LVMArg(), object}
		f := Finding{ID: ThinSize, Object: object,
			Message: fmt.Sprintf("thin pool %s holds %s of data, below its declared %s (%s in %s extents)",
				object, units.FormatSize(tp.DataSize), want.Size, units.FormatSize(wantBytes), units.FormatSize(extent)),
			Expected: units.FormatSize(wantBytes), Observed: units.FormatSize(tp.DataSize),
			Remedy: shell.Join(grow),
		}
		if need := wantBytes - tp.DataSize; !p.vgRoom(tp.VG, need) {
			msg, remedy := p.noRoom(tp.VG, need)
			f.Message, f.Remedy = f.Message+msg, remedy
			p.add(f)
			return
		}
		key := p.add(f)
		p.act(phaseChange, Action{ID: "thin.size:" + object, Kind: KindCommand, Class: Live, Object: object,
			Summary:  fmt.Sprintf("grow thin pool %s from %s to its declared %s", object, units.FormatSize(tp.DataSize), want.Size),
			Commands: [][]string{grow}, Remedies: []string{key}})
	case tp.DataSize > wantBytes && !p.autoextendAllows(tp.VG, want.Autoextend, tp.DataSize):
		p.add(Finding{ID: ThinSize, Object: object,
			Message: fmt.Sprintf("thin pool %s holds %s of data, above its declared %s: keel never shrinks a pool (lvm2 cannot reduce a thin pool's data)",
				object, units.FormatSize(tp.DataSize), want.Size),
			Expected: units.FormatSize(wantBytes), Observed: units.FormatSize(tp.DataSize),
			Remedy: fmt.Sprintf("declare size: %q for %s to keep what is there", units.LVMArg(tp.DataSize), object),
		})
	}
}

// vdoGrowSlack is how far above its declared size a VDO pool may end after
// keel grew it: lvm2 raises every extension of a VDO pool to at least one
// slab ("Increasing incremental size ... to fit new VDO slab",
// lib/metadata/lv_manip.c; vdo.MinGrowBytes), so a declared size that is not
// a whole number of such steps above the old one cannot be met exactly.
func vdoGrowSlack(o observedVDO) uint64 {
	if o.slab == 0 {
		return 0
	}
	return vdo.MinGrowBytes(o.slab, o.extent) - o.extent
}

// planVDOSize compares the VDO pool's physical size and its VDO LV's
// virtual size with the declared ones. A plain pool grows with one
// lvextend of the pool LV (lvmvdo(7), "Extending the VDOPoolLV size"); a
// split pool grows in the steps keel recommend --grow computes
// (vdo.Layout.PlanSplitGrow), so that the recovery journal and the slab
// summary, which dm-vdo moves to the new end at each grow, end on the fast
// PVs. The VDO LV grows with lvextend of the LV (lvmvdo(7), "Extending or
// reducing the VDOLV size"). Neither is ever reduced.
func (p *planner) planVDOSize(object string, o observedVDO, d vdo.Pool, vgWant spec.VolumeGroup, want spec.VDOPool) {
	var grow *Action
	if poolLV := p.h.LVs[object]; poolLV != nil && want.Size.Bytes > 0 {
		grow = p.planVDOPhysical(object, poolLV.Size, o, d, vgWant, want)
	}
	if o.lv == nil || want.VirtualSize.Bytes == 0 {
		if grow != nil {
			p.act(phaseChange, *grow)
		}
		return
	}
	wantVirt := roundUpExtent(want.VirtualSize.Bytes, o.extent)
	switch lv := o.lv; {
	case lv.Size < wantVirt:
		cmd := []string{"lvextend", "-L", want.VirtualSize.LVMArg(), lv.FullName}
		f := Finding{ID: VDOVirtualSize, Object: lv.FullName,
			Message:  fmt.Sprintf("VDO LV %s is %s, below its declared virtualSize %s", lv.FullName, units.FormatSize(lv.Size), want.VirtualSize),
			Expected: units.FormatSize(wantVirt), Observed: units.FormatSize(lv.Size),
			Remedy: shell.Join(cmd),
		}
		if !want.Overcommit && wantVirt > p.thickAfter(o, grow, want) {
			// Without overcommit: true, keel never makes the LV larger
			// than the pool (as keel grows it) holds thick: vdo.overcommit
			// says what the desired state asks for.
			f.Message += ", more than the pool holds thick: keel grows it only with overcommit: true"
			f.Remedy = "declare overcommit: true for " + object + p.poolSizeFor(o, want.VirtualSize.Bytes, object)
			p.add(f)
			break
		}
		key := p.add(f)
		if grow != nil {
			// One action: the LV grows only once the pool under it has.
			grow.Commands = append(grow.Commands, cmd)
			grow.Remedies = append(grow.Remedies, key)
			grow.Summary += fmt.Sprintf(", then VDO LV %s to its declared %s", lv.FullName, want.VirtualSize)
			break
		}
		p.act(phaseChange, Action{ID: "vdo.virtual_size:" + lv.FullName, Kind: KindCommand, Class: Live, Object: lv.FullName,
			Summary:  fmt.Sprintf("grow VDO LV %s from %s to its declared %s", lv.FullName, units.FormatSize(lv.Size), want.VirtualSize),
			Commands: [][]string{cmd}, Remedies: []string{key}})
	case lv.Size > wantVirt:
		p.add(Finding{ID: VDOVirtualSize, Object: lv.FullName,
			Message: fmt.Sprintf("VDO LV %s is %s, above its declared virtualSize %s: keel never shrinks a VDO LV (what sits on it would lose its end)",
				lv.FullName, units.FormatSize(lv.Size), want.VirtualSize),
			Expected: units.FormatSize(wantVirt), Observed: units.FormatSize(lv.Size),
			Remedy: fmt.Sprintf("declare virtualSize: %q for %s to keep what is there (with overcommit: true if the pool cannot hold it thick)", units.LVMArg(lv.Size), object),
		})
	}
	if grow != nil {
		p.act(phaseChange, *grow)
	}
}

// thickAfter is the largest virtual size the pool holds thick once grow
// (nil: none) has run: the limit of a pool of the declared size, as dm-vdo
// lays out a grown pool like a new one of that size. 0 when unknown.
func (p *planner) thickAfter(o observedVDO, grow *Action, want spec.VDOPool) uint64 {
	l := o.layout
	if l == nil {
		return 0
	}
	if grow == nil {
		return l.MaxThickVirtualBytes(o.extent)
	}
	g := l.Geometry
	g.PhysicalBytes = roundUpExtent(want.Size.Bytes, o.extent)
	grown, err := vdo.NewLayout(g)
	if err != nil {
		return 0
	}
	return grown.MaxThickVirtualBytes(o.extent)
}

// planVDOPhysical is planVDOSize for the pool LV (the physical size): it
// adds the finding and returns the grow, if any, for planVDOSize to plan.
func (p *planner) planVDOPhysical(object string, have uint64, o observedVDO, d vdo.Pool, vgWant spec.VolumeGroup, want spec.VDOPool) *Action {
	wantBytes := roundUpExtent(want.Size.Bytes, o.extent)
	if have > wantBytes+vdoGrowSlack(o) && !p.autoextendAllows(o.pool.VG, want.Autoextend, have) {
		p.add(Finding{ID: VDOSize, Object: object,
			Message: fmt.Sprintf("VDO pool %s is %s, above its declared size %s: a VDO pool cannot shrink (lvmvdo(7))",
				object, units.FormatSize(have), want.Size),
			Expected: units.FormatSize(wantBytes), Observed: units.FormatSize(have),
			Remedy: fmt.Sprintf("declare size: %q for %s to keep what is there", units.LVMArg(have), object),
		})
		return nil
	}
	if have >= wantBytes {
		// At or above it: an autoextend policy grows a pool past its
		// declared size, up to its maximum (planAutoextend).
		return nil
	}
	f := Finding{ID: VDOSize, Object: object,
		Message:  fmt.Sprintf("VDO pool %s is %s, below its declared size %s", object, units.FormatSize(have), want.Size),
		Expected: units.FormatSize(wantBytes), Observed: units.FormatSize(have),
	}
	vgName, _, _ := strings.Cut(object, "/")
	if need := wantBytes - have; !p.vgRoom(vgName, need) {
		msg, remedy := p.noRoom(vgName, need)
		f.Message, f.Remedy = f.Message+msg, remedy
		p.add(f)
		return nil
	}
	cmds := [][]string{{"lvextend", "-L", want.Size.LVMArg(), object}}
	if want.Split != nil {
		var err error
		if cmds, err = splitGrowCmds(o, d, wantBytes-have, vgWant.PVs, want.Split.Fast); err != nil {
			f.Message += fmt.Sprintf(" (a split pool grows in steps that keep its journal on the fast PVs, and those cannot be planned: %v)", err)
			f.Remedy = fmt.Sprintf("keel recommend --split --size %s --grow %s --vg %s and run its lvextend lines, naming the fast PVs on the last one",
				units.LVMArg(have), units.LVMArg(wantBytes-have), d.VG)
			key := p.add(f)
			p.reportOnly(VDOSize, object, "the split pool's grow cannot be planned: the finding's remedy computes it by hand", key)
			return nil
		}
		f.Message += "; the grow allocates on the slow PVs first and ends on the fast ones, so the recovery journal stays there"
	}
	f.Remedy = shellAnd(cmds)
	key := p.add(f)
	return &Action{ID: "vdo.size:" + object, Kind: KindCommand, Class: Live, Object: object,
		Summary:  fmt.Sprintf("grow VDO pool %s from %s to its declared %s", object, units.FormatSize(have), want.Size),
		Commands: cmds, Remedies: []string{key}}
}

// splitGrowCmds are the lvextend steps growing a split pool by grow bytes
// (keel recommend --grow's plan): the slow PVs are the VG's declared PVs
// that are not fast.
func splitGrowCmds(o observedVDO, d vdo.Pool, grow uint64, pvs, fast []string) ([][]string, error) {
	if o.layout == nil {
		return nil, fmt.Errorf("the pool's geometry is unknown")
	}
	var slow []string
	for _, pv := range pvs {
		if !slices.Contains(fast, pv) {
			slow = append(slow, pv)
		}
	}
	g, err := o.layout.PlanSplitGrow(grow, o.extent)
	if err != nil {
		return nil, err
	}
	return d.GrowArgs(g, fast, slow), nil
}

// planVGPVs compares the PVs of an existing VG with the declared ones:
//   - a declared PV not in the VG is added with pvcreate and vgextend (the
//     executor's blank check refuses a device with any signature but an
//     orphan PV's, as for vgcreate); a PV of another VG is only reported;
//   - a PV whose device grew under it (a LUN or virtual disk resized) is
//     grown with pvresize, which takes the device's size (pvresize(8));
//   - a PV of the VG no longer declared is vg.pvs_drift (vgHeld): keel
//     never runs vgreduce or pvmove on its own.
func (p *planner) planVGPVs(name string, want spec.VolumeGroup) {
	vg := p.h.VGs[name]
	var add []string
	for _, path := range want.PVs {
		pvName := p.resolvePV(path)
		pv := p.h.PVs[pvName]
		switch {
		case pv == nil && vg.Partial():
			// A missing PV of the VG is not found by its path either:
			// vg.incomplete reports it, and nothing is added.
		case pv == nil && !p.devicePresent(path):
			p.add(Finding{ID: VGPVNotInVG, Object: name,
				Message:  fmt.Sprintf("declared PV %s of VG %s is not on this host", path, name),
				Expected: "in VG " + name, Observed: "no such device",
				Remedy: fmt.Sprintf("attach the disk %s names, or correct the pvs of VG %s", path, name),
			})
		case pv == nil:
			add = append(add, path)
		case pv.VG == "":
			add = append(add, path)
		case pv.VG != name:
			p.add(Finding{ID: VGPVNotInVG, Object: name,
				Message:  fmt.Sprintf("declared PV %s (%s) belongs to VG %s, not %s", path, pvName, pv.VG, name),
				Expected: "in VG " + name, Observed: "in VG " + pv.VG,
				Remedy: fmt.Sprintf("take %s out of the VG %s's declaration, or free it from VG %s by hand first (pvmove, vgreduce): keel never moves a PV between VGs", path, name, pv.VG),
			})
		default:
			p.planPVResize(pv)
		}
	}
	if len(add) > 0 {
		var cmds [][]string
		for _, path := range add {
			if p.h.PVs[p.resolvePV(path)] == nil {
				cmds = append(cmds, []string{"pvcreate", path})
			}
		}
		cmds = append(cmds, append([]string{"vgextend", name}, add...))
		key := p.add(Finding{ID: VGPVNotInVG, Object: name,
			Message:  fmt.Sprintf("declared PVs not in VG %s: %s", name, strings.Join(add, ", ")),
			Expected: "VG on " + strings.Join(want.PVs, ", "), Observed: "VG on " + strings.Join(vg.PVs, ", "),
			Remedy: shellAnd(cmds) + " (on blank devices only)",
		})
		p.act(phaseCreateVG, Action{ID: "vg.extend:" + name, Kind: KindCommand, Class: Live, Object: name,
			Summary:  fmt.Sprintf("extend VG %s with %s (the executor checks the PVs are blank)", name, strings.Join(add, " ")),
			Commands: cmds, Remedies: []string{key}})
	}
}

// devicePresent reports whether the declared path names a block device
// this pass saw, or an existing LV.
func (p *planner) devicePresent(path string) bool {
	if lv, ok := p.isLVPath(path); ok {
		return p.h.LVs[lv] != nil
	}
	return p.h.Device(path) != ""
}

// defaultPEStart is lvm2's default start of the data area on a PV
// (devices/default_data_alignment, 1 MiB, lvm.conf(5)).
const defaultPEStart = 1 << 20

// planPVResize grows a PV whose device is larger than the PV: pv_size is
// pv_pe_count extents (pv_size_field, lib/metadata/pv.c), the device's size
// is sysfs's (queue size, or LVM's dev_size when sysfs was not read). A
// device with room for at least one more extent past the data area start
// and a partial tail extent has grown.
func (p *planner) planPVResize(pv *model.PV) {
	dev := pv.DevSize
	if q := p.h.Queues[pv.Device]; q != nil && q.Size > 0 {
		dev = q.Size
	}
	extent := p.vgExtent(pv.VG)
	if pv.Size == 0 || dev < pv.Size+defaultPEStart+2*extent {
		return
	}
	resize := []string{"pvresize", pv.Name}
	key := p.add(Finding{ID: VGPVGrown, Object: pv.Name,
		Message:  fmt.Sprintf("the device of PV %s grew to %s; the PV still spans %s", pv.Name, units.FormatSize(dev), units.FormatSize(pv.Size)),
		Expected: "PV spanning its device", Observed: fmt.Sprintf("pv_size %s, device %s", units.FormatSize(pv.Size), units.FormatSize(dev)),
		Remedy: shell.Join(resize),
	})
	p.act(phaseCreateVG, Action{ID: "vg.pv_grown:" + pv.Name, Kind: KindCommand, Class: Live, Object: pv.VG,
		Summary:  fmt.Sprintf("grow PV %s of VG %s to its device's %s", pv.Name, pv.VG, units.FormatSize(dev)),
		Commands: [][]string{resize}, Remedies: []string{key}})
}

// declaredOvercommitRemedy is the vdo.overcommit remedy when the declared
// virtual size is itself above the limit the pool holds thick now. A pool
// below its declared size that, grown to it, holds the declared virtual
// size thick needs only that grow (dm-vdo lays out a grown pool as
// vdoformat would a new one of that size, so the thick limit is the one of
// a pool of the declared size); otherwise the desired state asks for more
// than the pool can hold, and only the desired state can change that.
func (p *planner) declaredOvercommitRemedy(object string, o observedVDO, limit uint64, want spec.VDOPool) string {
	virt := want.VirtualSize.Bytes
	if l := o.layout; l != nil && want.Size.Bytes > o.physical {
		g := l.Geometry
		g.PhysicalBytes = roundUpExtent(want.Size.Bytes, o.extent)
		if grown, err := vdo.NewLayout(g); err == nil && virt <= grown.MaxThickVirtualBytes(o.extent) {
			return fmt.Sprintf("grow pool %s to its declared size %s, which holds the declared virtualSize %s thick: keel does it (vdo.size)",
				object, want.Size, want.VirtualSize)
		}
	}
	return fmt.Sprintf("the declared virtualSize %s is itself above the %s pool %s holds thick: declare overcommit: true for %s to accept it%s; keel never reduces the VDO LV below its declared size",
		want.VirtualSize, units.FormatSize(limit), object, object, p.poolSizeFor(o, virt, object))
}

// declaredVDOPool returns the declared pool "vg/pool" outside audit mode.
func (p *planner) declaredVDOPool(object string) (spec.VDOPool, bool) {
	if p.audit || p.d == nil {
		return spec.VDOPool{}, false
	}
	vg, pool, _ := strings.Cut(object, "/")
	want, ok := p.d.VolumeGroups[vg].VDOPools[pool]
	return want, ok
}

// poolSizeFor names the smallest pool size, in whole slabs above the
// pool's own, that holds virt thick (", or declare size: … for pool"),
// from the same layout arithmetic as the thick limit; "" when the geometry
// is unknown or no pool up to 8192 slabs larger holds it.
func (p *planner) poolSizeFor(o observedVDO, virt uint64, object string) string {
	l := o.layout
	if l == nil || o.slab == 0 {
		return ""
	}
	g := l.Geometry
	for range 8192 {
		g.PhysicalBytes = roundUpExtent(g.PhysicalBytes+o.slab, o.extent)
		grown, err := vdo.NewLayout(g)
		if err != nil {
			return ""
		}
		if grown.MaxThickVirtualBytes(o.extent) >= virt {
			return fmt.Sprintf(", or declare size: %q for %s, which holds it thick (keel then grows the pool: vdo.size)", units.LVMArg(g.PhysicalBytes), object)
		}
	}
	return ""
}
