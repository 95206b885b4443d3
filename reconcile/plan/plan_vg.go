package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/lvm/units"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/plan/removal"
	"github.com/keel-storage/keel/reconcile/state"
	"github.com/keel-storage/keel/schema/spec"
)

// defaultExtentBytes is LVM's default physical extent size, used to plan a
// VG that does not exist yet.
const defaultExtentBytes = 4 << 20

// unreadableVG reports, after adding vg.unreadable, whether the VG name,
// which LVM does not report, still has LVs running in the kernel: its
// device-mapper devices, named by LVM as the VG name with each "-" doubled,
// then "-" and the LV name (lvm2's dm_build_dm_name), are there. LVM then
// cannot read the VG's metadata from its PVs (a PV returning I/O errors or
// gone from under running LVs, as e2e/faults shows with an error table under
// the PV), which is not a VG that was never created: keel must not create it
// again on those PVs, nor plan anything for its pools. A VG declared on LVs
// while scan_lvs is 0 is not that: LVM skips PVs on LVs by configuration
// (an lvm.conf a package upgrade reset), its LVs may well run, and
// lvm.scan_lvs says why; it stays vg.missing.
func (p *planner) unreadableVG(name string, want spec.VolumeGroup) bool {
	if scan, known := p.lvmBool("devices/scan_lvs"); !known || !scan {
		for _, path := range want.PVs {
			if _, onLV := p.isLVPath(path); onLV {
				return false
			}
		}
	}
	prefix := lvm.DMPrefix(name)
	var running []string
	for dm := range p.h.DM {
		if rest, ok := strings.CutPrefix(dm, prefix); ok && rest != "" && rest[0] != '-' {
			running = append(running, dm)
		}
	}
	if len(running) == 0 {
		return false
	}
	slices.Sort(running)
	// What the operator needs: which LVs still run and in what state (a
	// VDO pool read-only, a thin pool failed: the VMs on it fail writes
	// now), and the devices under them, where the failing disk is.
	lvs := strings.Join(p.withTrouble(running), ", ")
	under := p.devicesUnder(running)
	on, check := "", "/dev/mapper/"+running[0]
	if len(under) > 0 {
		on = " on " + strings.Join(p.withTrouble(under), ", ")
		check = strings.Join(under, " ")
	}
	p.add(Finding{ID: VGUnreadable, Object: name,
		Message: fmt.Sprintf("LVM reads no VG %s, yet the kernel runs its LVs (%s)%s: a PV under it fails or is gone",
			name, lvs, on),
		Expected: "VG readable from its PVs", Observed: "no VG metadata; device-mapper devices " + lvs + on,
		Remedy: fmt.Sprintf("find the failing disk (dmesg; lsblk -s %s; smartctl -a on the disk it lists) and bring it back; do not pvcreate or vgcreate on it; keel plans nothing for %s until LVM reads it",
			check, name),
	})
	return true
}

// withTrouble returns the device-mapper devices (names, or /dev/mapper/
// paths) each followed by what the kernel reports wrong with it, if
// anything (probes.DMDevice.Trouble): "fvg-vpool-vpool (vdo read-only)".
func (p *planner) withTrouble(devs []string) []string {
	out := make([]string, len(devs))
	for i, d := range devs {
		out[i] = d
		if dm := p.h.DM[strings.TrimPrefix(d, "/dev/mapper/")]; dm != nil {
			if t := dm.Trouble(); t != "" {
				out[i] += " (" + t + ")"
			}
		}
	}
	return out
}

// devicesUnder returns the block devices the device-mapper devices running
// hold that are not among them: /dev/<kernel name>, or /dev/mapper/<name>
// for a device-mapper device, from sysfs's slaves links, sorted. These are the
// VG's PVs as the kernel still uses them.
func (p *planner) devicesUnder(running []string) []string {
	kernel := map[string]string{} // dm name -> kernel name
	for k, q := range p.h.Queues {
		if q.DMName != "" {
			kernel[q.DMName] = k
		}
	}
	inVG := map[string]bool{}
	for _, dm := range running {
		inVG[kernel[dm]] = true
	}
	found := map[string]bool{}
	var walk func(k string, depth int)
	walk = func(k string, depth int) {
		q := p.h.Queues[k]
		if q == nil || depth > 16 {
			return
		}
		for _, s := range q.Slaves {
			switch sq := p.h.Queues[s]; {
			case inVG[s]:
				walk(s, depth+1)
			case sq != nil && sq.DMName != "":
				found["/dev/mapper/"+sq.DMName] = true
			default:
				found["/dev/"+s] = true
			}
		}
	}
	for _, dm := range running {
		walk(kernel[dm], 0)
	}
	return slices.Sorted(maps.Keys(found))
}

// planVG judges one declared VG, then its pools and absent LVs.
func (p *planner) planVG(name string, want spec.VolumeGroup) {
	vg := p.h.VGs[name]
	phase := 0
	for _, path := range want.PVs {
		if _, ok := p.isLVPath(path); ok {
			phase = phaseStacked
		}
	}
	if p.planMultipath(name, want) {
		return // a declared PV is a path of a multipath map: findings only
	}
	if vg == nil && p.unreadableVG(name, want) {
		return // nothing is planned on a VG whose PVs fail
	}
	if vg != nil && p.vgHeld(name, want) {
		return // not the declared VG: findings only
	}
	if vg == nil {
		key := p.add(Finding{ID: VGMissing, Object: name,
			Message:  fmt.Sprintf("VG %s does not exist", name),
			Expected: "VG on " + strings.Join(want.PVs, ", "), Observed: "no such VG",
			Remedy: createRemedy(want.Create, "pvcreate and vgcreate on the declared PVs"),
		})
		if want.Create {
			var cmds [][]string
			for _, pv := range want.PVs {
				cmds = append(cmds, []string{"pvcreate", pv})
			}
			cmds = append(cmds, append([]string{"vgcreate", name}, want.PVs...))
			p.act(phaseCreateVG+phase, Action{ID: "vg.create:" + name, Kind: KindCommand, Class: Live, Object: name,
				Summary:  fmt.Sprintf("create VG %s on %s (the executor checks the PVs are blank)", name, strings.Join(want.PVs, " ")),
				Commands: cmds, Remedies: []string{key}})
		}
	} else {
		p.checkVGHealth(name, want)
		p.planPvmove(name)
		p.planVGPVs(name, want)
	}
	for _, pool := range slices.Sorted(maps.Keys(want.VDOPools)) {
		p.planVDO(name, pool, want, want.VDOPools[pool], phase)
	}
	for _, pool := range slices.Sorted(maps.Keys(want.ThinPools)) {
		p.planThin(name, pool, want.ThinPools[pool], phase)
	}
	if vg != nil {
		p.planAbsent(name, want.Absent)
	}
}

func createRemedy(create bool, what string) string {
	if create {
		return "keel creates it (create: true): " + what
	}
	return "set create: true to let keel create it, or create it by hand: " + what
}

// checkVGHealth reports a partial VG and declared pools that are inactive.
func (p *planner) checkVGHealth(name string, want spec.VolumeGroup) {
	vg := p.h.VGs[name]
	if vg.Partial() {
		var missing []string
		for _, pvName := range vg.PVs {
			if pv := p.h.PVs[pvName]; pv != nil && len(pv.Attr) > 2 && pv.Attr[2] == 'm' {
				missing = append(missing, pvName)
			}
		}
		obs := "vg_attr " + vg.Attr
		if len(missing) > 0 {
			obs += "; missing " + strings.Join(missing, ", ")
		}
		p.add(Finding{ID: VGIncomplete, Object: name,
			Message:  fmt.Sprintf("VG %s is partial: PVs are missing", name),
			Expected: "all PVs present", Observed: obs,
			Remedy: "bring the missing device back; do not vgreduce --removemissing without a plan",
		})
	}
	inactive := p.inactivePools(name)
	if len(inactive) > 0 && !p.activationReported(name) {
		p.add(Finding{ID: VGInactive, Object: name,
			Message:  fmt.Sprintf("VG %s has inactive pools: %s", name, strings.Join(inactive, ", ")),
			Expected: "active", Observed: "inactive",
			Remedy: p.activatePools(inactive),
		})
	}
}

// inactivePools returns the "vg/lv" of the declared pools of VG vg that
// exist and are inactive: the VDO LV of each VDO pool, each thin pool.
func (p *planner) inactivePools(vg string) []string {
	if p.audit || p.d == nil {
		return nil
	}
	want, ok := p.d.VolumeGroups[vg]
	if !ok {
		return nil
	}
	var out []string
	for _, pool := range slices.Sorted(maps.Keys(want.VDOPools)) {
		if lv := p.h.LVs[vg+"/"+want.VDOPools[pool].LV]; lv != nil && !lv.Active {
			out = append(out, lv.FullName)
		}
	}
	for _, pool := range slices.Sorted(maps.Keys(want.ThinPools)) {
		if lv := p.h.LVs[vg+"/"+pool]; lv != nil && !lv.Active {
			out = append(out, lv.FullName)
		}
	}
	return out
}

// activatePools activates exactly the named pools: never vgchange -ay,
// which would also start every guest disk in the VG (Proxmox activates a
// VM's disks itself, lvchange -aey at qm start, and leaves the others
// inactive). Activating a thin pool does not activate its thin LVs. A pool
// an interrupted activation left partly up is first taken down
// (stackDownCmds), since lvm2 refuses to activate it over an active
// component.
func (p *planner) activatePools(lvs []string) string {
	var cmds [][]string
	for _, lv := range lvs {
		cmds = append(cmds, p.stackDownCmds(lv)...)
	}
	return shellAnd(append(cmds, append([]string{"lvchange", "-ay"}, lvs...)))
}

// stackDownCmds returns what must run before lvchange -ay of the inactive
// LV full (a thin pool or a VDO LV) when an activation that stopped half-way
// left part of its device stack up. lvm2 refuses to activate an LV while a
// component of it is active and the LV holding the component is not
// ("Activation of logical volume … is prohibited while logical volume … is
// active", activate_lv and lv_component_is_active in
// lib/activate/activate.c):
//   - a thin pool with its _tdata or _tmeta active: lvchange -an of those
//     (e2e/kill, kind thin-partial);
//   - a thin pool whose thin-pool table is loaded but not live (lvcreate or
//     lvchange -ay killed between the table load and its resume): in the
//     pool's own device, or in its <vg>-<pool>-tpool layer when thin LVs
//     exist. The inactive table holds _tdata and _tmeta open, so lvchange
//     -an of those fails with "is used by another device". lvchange -an of
//     the pool takes the three devices down (an unused pool) or does
//     nothing (a pool in use, whose public device is gone), and lvchange -ay
//     of the pool then loads and resumes the table in either case (e2e/kill,
//     kind thin-lvcreate; both states rebuilt with dmsetup and run in
//     e2e/remedies TestThinPoolInactiveTable);
//   - a VDO LV whose pool has its _vdata active, or a <vg>-<pool>-vpool
//     device with or without a live table (an lvconvert --type vdo-pool or
//     lvchange -ay killed while loading dm-vdo leaves one that holds _vdata
//     open, so lvchange -an of _vdata fails with "is used by another
//     device"): lvchange -an of the VDO pool, which lvm2 takes down whole
//     (e2e/kill, kind vdo-partial; each state tried on the guest).
func (p *planner) stackDownCmds(full string) [][]string {
	lv := p.h.LVs[full]
	if lv == nil || lv.Active {
		return nil
	}
	switch lv.SegType {
	case "thin-pool":
		if p.thinPoolTableLoaded(lv) {
			return [][]string{{"lvchange", "-an", lv.FullName}}
		}
		var parts []string
		for _, sub := range []string{lv.DataLV, lv.MetadataLV} {
			if c := p.h.LVs[sub]; c != nil && c.Active {
				parts = append(parts, c.FullName)
			}
		}
		if len(parts) > 0 {
			return [][]string{append([]string{"lvchange", "-an"}, parts...)}
		}
	case "vdo":
		pool := p.h.LVs[lv.Pool]
		if pool == nil {
			return nil
		}
		_, vpool := p.h.DM[lvm.DMLayerName(lvm.Split(pool.FullName).DMName(), lvm.LayerVDOPool)]
		if data := p.h.LVs[pool.DataLV]; vpool || (data != nil && data.Active) {
			return [][]string{{"lvchange", "-an", pool.FullName}}
		}
	}
	return nil
}

// thinPoolTableLoaded tells whether the inactive thin pool lv has a
// device-mapper device left, its own or its tpool layer's
// (lvm.LayerThinPool); inactive, the pool has no live table in it.
func (p *planner) thinPoolTableLoaded(lv *model.LV) bool {
	for _, name := range []string{lv.DMName, lvm.DMLayerName(lv.DMName, lvm.LayerThinPool)} {
		if _, ok := p.h.DM[name]; ok {
			return true
		}
	}
	return false
}

// activationReported tells whether activation.pvscan_on_lvs describes the
// VG's inactive pools (checkActivation, which runs later in planStacking).
func (p *planner) activationReported(vg string) bool {
	return p.lowerActive(vg) && len(p.inactivePools(vg)) > 0
}

// lowerActive reports whether VG vg is stacked on LVs and one of them is
// active: its PVs are there for lvm2 to scan.
func (p *planner) lowerActive(vg string) bool {
	for _, key := range p.stackedVGs()[vg] {
		if lv := p.h.LVs[key]; lv != nil && lv.Active {
			return true
		}
	}
	return false
}

// checkActivation judges the boot activation of a VG on LVs by what breaks
// without it. After a boot lvm2's udev rules leave such a VG inactive unless
// a rule sets LVM_PVSCAN_ON_LVS=1 for the LV below (69-dm-lvm.rules;
// devices/scan_lvs "does not enable autoactivation of layered VGs",
// conf/example.conf.in). That alone breaks nothing on Proxmox VE: its LVM
// plugin activates each VM disk with lvchange -aey at qm start, and a VG
// whose LVs are all inactive is the normal state after a boot (seed 000,
// tested on the guest). It breaks what keel is declared to keep running in
// that VG: a declared thin or VDO pool that is inactive while the LV below
// is active. A PV on an active LV that LVM does not see at all is reported
// as lvm.scan_lvs (scan_lvs 0) or vg.missing: keel reads no signatures to
// tell a hidden PV from one never created. The remedy activates the
// declared pools only, and installs keel's udev rule for the next boot.
func (p *planner) checkActivation(vg string, lowers []string) {
	if p.h.VGs[vg] == nil || !p.lowerActive(vg) {
		return
	}
	inactive := p.inactivePools(vg)
	if len(inactive) == 0 {
		return
	}
	p.add(Finding{ID: ActivationPVScanOnLVs, Object: vg,
		Message: fmt.Sprintf("VG %s sits on %s, which is active, yet its declared pools %s are not: lvm2's udev rules skip PVs on LVs at boot unless LVM_PVSCAN_ON_LVS=1 is set for the LV below",
			vg, strings.Join(lowers, ", "), strings.Join(inactive, ", ")),
		Expected: "declared pools of " + vg + " active after boot", Observed: "inactive: " + strings.Join(inactive, ", "),
		Remedy: p.activatePools(inactive) + " && keel udev-rules --write",
	})
}

// planAbsent emits a destructive wipe for each LV the desired state lists
// as absent that still exists (or was already renamed to del-<name>).
func (p *planner) planAbsent(vg string, absent []spec.AbsentLV) {
	mode := p.d.Removal.Mode
	if mode == "" {
		mode = "zeroout"
	}
	step, err := units.ParseSize(p.d.Removal.Step)
	if err != nil || step == 0 {
		step = 32 << 20
	}
	for _, entry := range absent {
		name := entry.Name
		object := vg + "/" + name
		lv := p.h.LVs[object]
		if lv == nil {
			lv = p.h.LVs[vg+"/del-"+name]
		}
		if lv == nil || p.absentHeld(vg, name, lv, entry.UUID) {
			continue
		}
		if p.absentGuards(vg, name, lv) {
			continue
		}
		how := p.clears(lv, mode)
		msg := fmt.Sprintf("LV %s is declared absent but exists (%s, uuid %s, created %s)", object, lv.FullName, lv.UUID, lvTime(lv))
		switch rec, ok := p.mem.Absent[object]; {
		case entry.UUID != "":
			msg += "; the entry pins this uuid"
		case ok && !rec.FirstSeen.IsZero():
			msg += "; keel first saw the name in absent at " + state.Stamp(rec.FirstSeen)
		}
		key := p.add(Finding{ID: LVAbsent, Object: object,
			Message:  msg,
			Expected: "absent", Observed: "present, " + units.FormatSize(lv.Size),
			Remedy: fmt.Sprintf("rename to del-%s, %s in steps of %s, lvremove", name, how, units.FormatSize(step)),
		})
		p.act(phaseChange, Action{ID: "lv.absent:" + object, Kind: KindWipe, Class: Destructive, Object: object,
			Summary:  fmt.Sprintf("wipe (%s) and remove %s, as the desired state asks", how, object),
			Wipe:     &WipeSpec{VG: vg, LV: name, Mode: mode, StepMax: step, UUID: lv.UUID},
			Remedies: []string{key}})
	}
}

// clears says how removal clears lv when removal.mode is mode: "zeroout",
// "discard" or "zeroout then discard", decided per LV from the devices
// under it (removal.Clearing) as reconcile/apply/wipe will.
func (p *planner) clears(lv *model.LV, mode string) string {
	if p.clearing == nil {
		c := removal.NewClearing(p.h)
		p.clearing = &c
	}
	how, after := p.clearing.Clears(lv, removal.Mode(mode))
	if after {
		return string(how) + " then discard"
	}
	return string(how)
}
