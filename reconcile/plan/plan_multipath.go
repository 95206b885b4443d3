package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/schema/spec"
)

// planMultipath judges the device-mapper multipath maps under a declared
// VG, before anything else of the VG is planned, and reports whether keel
// holds the VG:
//
//   - a declared PV that names one path of a multipath map (a slave of a
//     dm device whose table is "multipath") is pv.multipath_component, and
//     the VG is held: LVM itself hides such a path and reads the PV through
//     the map (devices/multipath_component_detection, on by default: lvm2
//     lib/device/dev-mpath.c skips a device one of whose holders is a dm
//     device with a UUID starting "mpath-"), so keel would find no PV
//     there and plan a pvcreate and vgcreate or vgextend on a disk that
//     holds the VG;
//   - a map under the VG's PVs (the PV itself, or below it through
//     partitions or stacked VGs) with failed paths is pv.multipath_degraded,
//     with none left pv.multipath_no_path.
//
// The path states are the kernel's (model.Multipath, dm-mpath's status).
func (p *planner) planMultipath(name string, want spec.VolumeGroup) bool {
	if len(p.h.Multipath) == 0 {
		return false
	}
	held := false
	for _, path := range want.PVs {
		if _, ok := p.isLVPath(path); ok {
			continue
		}
		dev := p.h.Device(path)
		m := p.h.MultipathOf(dev)
		if m == nil {
			continue
		}
		mapPath := "/dev/mapper/" + m.Name
		hidden := ""
		if model.IsMultipathUUID(m.UUID) {
			hidden = "; LVM hides the path (multipath_component_detection) and sees the PV on the map"
		}
		p.add(Finding{ID: PVMultipathComponent, Object: name,
			Message: fmt.Sprintf("declared PV %s of VG %s is %s, on a path of multipath map %s, not the map%s; keel plans nothing in VG %s",
				path, name, dev, m.Name, hidden, name),
			Expected: mapPath, Observed: path + " (" + dev + ", on a path of " + m.Name + ")",
			Remedy: fmt.Sprintf("declare %s instead of %s in volumeGroups.%s.pvs (dmsetup table %s lists the map's paths)", mapPath, path, name, m.Name),
		})
		held = true
	}
	if held {
		if p.heldVGs == nil {
			p.heldVGs = map[string]bool{}
		}
		p.heldVGs[name] = true
	}
	for _, pm := range p.mapsUnder(name, want) {
		p.judgeMultipath(name, pm.pv, pm.m)
	}
	return held
}

// pvMap is a multipath map found under the PV named pv.
type pvMap struct {
	pv string
	m  *model.Multipath
}

// mapsUnder returns the multipath maps under VG name's PVs (LVM's) and its
// declared PVs, each once, by map name: a PV on the map, or on a device
// stacked on it (a partition of the map, a VG on it), followed through the
// slaves sysfs lists.
func (p *planner) mapsUnder(name string, want spec.VolumeGroup) []pvMap {
	type start struct{ pv, dev string }
	var starts []start
	if vg := p.h.VGs[name]; vg != nil {
		for _, pvName := range vg.PVs {
			if pv := p.h.PVs[pvName]; pv != nil && pv.Device != "" {
				starts = append(starts, start{pvName, pv.Device})
			}
		}
	}
	for _, path := range want.PVs {
		if _, ok := p.isLVPath(path); ok {
			continue
		}
		if dev := p.h.Device(path); dev != "" && p.h.MultipathOf(dev) == nil {
			starts = append(starts, start{path, dev})
		}
	}
	found := map[string]pvMap{}
	for _, s := range starts {
		seen := map[string]bool{}
		var walk func(dev string, depth int)
		walk = func(dev string, depth int) {
			if seen[dev] || depth > 8 {
				return
			}
			seen[dev] = true
			if m := p.h.MultipathByDevice(dev); m != nil {
				if _, ok := found[m.Name]; !ok {
					found[m.Name] = pvMap{s.pv, m}
				}
				return
			}
			if q := p.h.Queues[dev]; q != nil {
				for _, sl := range q.Slaves {
					walk(sl, depth+1)
				}
			}
		}
		walk(s.dev, 0)
	}
	out := make([]pvMap, 0, len(found))
	for _, k := range slices.Sorted(maps.Keys(found)) {
		out = append(out, found[k])
	}
	return out
}

// judgeMultipath raises pv.multipath_degraded or pv.multipath_no_path for
// map m under PV pv of VG vg when a path of it failed. keel has no remedy
// of its own: a path fails below it (a cable, a switch port, a target),
// and dm-mpath or multipathd's checker takes it back once it works.
func (p *planner) judgeMultipath(vg, pv string, m *model.Multipath) {
	failed := m.Failed()
	paths := m.Paths()
	if len(failed) == 0 || len(paths) == 0 {
		return
	}
	var obs []string
	var devs []string
	for _, pa := range paths {
		if !pa.Active {
			obs = append(obs, fmt.Sprintf("%s (%s) failed %d times", pa.Name(), pa.Dev, pa.FailCount))
			devs = append(devs, pa.Dev)
		}
	}
	reinstate := make([]string, len(devs))
	for i, d := range devs {
		reinstate[i] = fmt.Sprintf("dmsetup message %s 0 reinstate_path %s", m.Name, d)
	}
	remedy := fmt.Sprintf("check the failed paths' disks and links: dmsetup status %s (each path A active or F failed); multipath-tools' multipathd reinstates a path that works again (multipathd show paths), without multipath-tools: %s",
		m.Name, strings.Join(reinstate, "; "))
	id, what := PVMultipathDegraded, fmt.Sprintf("%d of %d paths failed", len(failed), len(paths))
	if m.ActivePaths() == 0 {
		id, what = PVMultipathNoPath, fmt.Sprintf("every path failed (%d), I/O to the PV fails or queues", len(paths))
	}
	p.add(Finding{ID: id, Object: vg,
		Message:  fmt.Sprintf("multipath map %s under PV %s of VG %s: %s: %s", m.Name, pv, vg, what, strings.Join(failed, ", ")),
		Expected: fmt.Sprintf("%d paths active", len(paths)), Observed: strings.Join(obs, ", "),
		Remedy: remedy,
	})
}
