package plan

import (
	"fmt"
	"maps"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/lvm/lvmregex"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/schema/spec"
)

// LVMConfObject is the object of the findings about lvm.conf settings.
const LVMConfObject = "lvm.conf"

// lvmBool reads an lvmconfig boolean ("0"/"1"); ok is false when the key is
// absent or not a number.
func (p *planner) lvmBool(key string) (value, ok bool) {
	switch strings.TrimSpace(p.h.LVMConfig.Values[key]) {
	case "1":
		return true, true
	case "0":
		return false, true
	}
	return false, false
}

// parseLVMList reads an lvmconfig string array such as ["r|^/dev/zd.*|","a|.*|"].
func parseLVMList(raw string) []string { return lvm.ConfigList(raw) }

func quoteList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ",") + "]"
}

func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// lvmBoolSetting reports a boolean lvm.conf setting that differs from the
// declared value and returns the finding's key ("" when it matches or is
// not managed).
func (p *planner) lvmBoolSetting(id FindingID, key string, want *bool) string {
	if want == nil {
		return ""
	}
	if got, ok := p.lvmBool(key); ok && got == *want {
		return ""
	}
	name := key[strings.IndexByte(key, '/')+1:]
	return p.add(Finding{ID: id, Object: LVMConfObject,
		Message:  key + " is not the declared value",
		Expected: name + "=" + boolDigit(*want), Observed: name + "=" + p.h.LVMConfig.Values[key],
		Remedy: "set " + key + " in lvm.conf",
	})
}

// planLVMConf compares the managed lvm.conf settings and emits one
// KindLVMConf action for everything that differs.
func (p *planner) planLVMConf() {
	want := p.d.LVM
	if want == nil {
		return
	}
	change := &LVMConfChange{}
	var keys []string
	if k := p.lvmBoolSetting(LVMScanLVs, "devices/scan_lvs", want.ScanLVs); k != "" {
		keys, change.ScanLVs = append(keys, k), want.ScanLVs
	}
	if want.GlobalFilter != nil {
		got := parseLVMList(p.h.LVMConfig.Values["devices/global_filter"])
		entries, kept, dropped := mergeFilter(want.GlobalFilter, got)
		p.checkDeclaredFilter(entries, want.ScanLVs)
		if strings.Join(got, "\x00") != strings.Join(entries, "\x00") {
			msg := "devices/global_filter is not the declared filter"
			if len(kept) > 0 {
				msg += "; the host's rejects " + quoteList(kept) + " stay (not declared, not in lvm.globalFilter.drop)"
			}
			if len(dropped) > 0 {
				msg += "; the write removes " + quoteList(dropped) + " from the host's filter"
			}
			keys = append(keys, p.add(Finding{ID: LVMGlobalFilter, Object: LVMConfObject,
				Message: msg + p.filterNotInForce(), Expected: quoteList(entries), Observed: quoteList(got),
				Remedy: "rewrite devices/global_filter in lvm.conf",
			}))
			change.GlobalFilter = entries
			if p.filterHidesPVs(entries) {
				return // refused: no lvm.conf write at all this pass
			}
		}
	} else if want.ScanLVs != nil && *want.ScanLVs {
		p.judgeHostFilter("desired:lvm.scanLVs", "scanLVs is true and no lvm.globalFilter is declared")
	}
	if k := p.lvmBoolSetting(LVMDevicesFile, "devices/use_devicesfile", want.UseDevicesFile); k != "" {
		keys, change.UseDevicesFile = append(keys, k), want.UseDevicesFile
	}
	if k := p.raidFaultPolicy(want.RaidFaultPolicy); k != "" {
		keys, change.RaidFaultPolicy = append(keys, k), want.RaidFaultPolicy
	}
	dropped := p.gateLVMConf(change)
	keys = slices.DeleteFunc(keys, func(k string) bool { return dropped[settingOfKey[k]] })
	if len(keys) > 0 {
		if change.GlobalFilter != nil || change.ScanLVs != nil {
			p.add(Finding{ID: LVMInitramfsStale, Object: LVMConfObject,
				Message:  "this pass rewrites global_filter or scan_lvs in lvm.conf; the initramfs keeps its own copy of /etc/lvm (Debian's lvm2 hook, /usr/share/initramfs-tools/hooks/lvm2), so early boot uses the older lvm.conf until it is rebuilt",
				Expected: "the initramfs rebuilt after the lvm.conf write", Observed: "lvm.conf rewritten this pass",
				Remedy: "update-initramfs -u",
			})
		}
		p.act(phaseLVMConf, Action{ID: "lvm.conf:" + LVMConfObject, Kind: KindLVMConf, Class: Live, Object: LVMConfObject,
			Summary: "assert devices settings in lvm.conf", LVMConf: change, Remedies: keys})
	}
}

// mergeFilter returns the global_filter keel writes for the declared
// filter gf on a host whose filter is got: the declared rejects, then every
// reject in force on the host that gf neither declares nor drops (in the
// host's order), then the accepts and the final r|.*| (spec.Entries).
// Platforms put their own rejects there (pve-manager's debian/postinst,
// set_lvm_conf: "r|/dev/zd.*|", "r|/dev/rbd.*|", "r|/dev/nbd.*|"; Harvester's
// harvester/os2 files/system/oem/91_lvm.yaml: loop, by-path longhorn and
// /dev/mapper/pvc- devices), and dropping one shows the guests' VGs inside
// zvols, RBD images or Longhorn volumes to the host. kept lists the host's
// rejects kept, dropped those the write removes: the ones gf.Drop names, and
// the host's final r|.*| when gf declares no accepts. The merge is a fixed
// point: on the filter it wrote, it writes the same entries again.
func mergeFilter(gf *spec.GlobalFilter, got []string) (entries, kept, dropped []string) {
	merged := spec.GlobalFilter{Reject: slices.Clone(gf.Reject), Accept: gf.Accept}
	for _, s := range got {
		e, err := lvmregex.ParseEntry(s)
		switch {
		case err != nil || e.Accept || slices.Contains(merged.Reject, e.Regex):
			// LVM refuses a filter with an entry it cannot parse, so such
			// an entry was never in force; accepts are not the platform's.
		case e.Regex == ".*":
			if len(gf.Accept) == 0 {
				dropped = append(dropped, s) // an allow-list's end, replaced by the declared filter
			}
		case slices.Contains(gf.Drop, e.Regex):
			dropped = append(dropped, s)
		default:
			merged.Reject = append(merged.Reject, e.Regex)
			kept = append(kept, s)
		}
	}
	return merged.Entries(), kept, dropped
}

// filterHidesPVs reports, as an error finding, every PV of a VG that the
// filter entries would hide from LVM, judged over each PV's aliases with
// LVM's rule (lvmregex.Filter.Decide); a filter keel cannot model is
// refused too. It returns true when the write must not happen: a filter
// that hides a PV in use makes its VG vanish from LVM's view while its LVs
// keep running, so starting, allocating and snapshotting fail, and the next
// initramfs bakes it in.
func (p *planner) filterHidesPVs(entries []string) bool {
	f, err := lvmregex.NewFilter(entries)
	if err != nil {
		p.add(Finding{ID: LVMFilterHidesPV, Object: "desired:lvm.globalFilter",
			Message:  fmt.Sprintf("keel cannot tell which PVs global_filter %s would hide (%v), so it does not write it", quoteList(entries), err),
			Expected: "a global_filter keel can judge", Observed: quoteList(entries),
			Remedy: "rewrite the entry in LVM's regex dialect (keel vet explains), or list the host's entry in lvm.globalFilter.drop",
		})
		return true
	}
	var hidden []string
	var first *model.PV
	var stable string // a by-id name of first to suggest an accept for
	for _, name := range slices.Sorted(maps.Keys(p.h.PVs)) {
		pv := p.h.PVs[name]
		if pv.VG == "" {
			continue
		}
		aliases := p.pvAliases(pv)
		v := f.Decide(aliases)
		if v.Accepted {
			continue
		}
		if first == nil {
			first, stable = pv, pv.Name
			for _, a := range aliases {
				if strings.HasPrefix(a, "/dev/disk/by-id/") && !strings.HasPrefix(a, "/dev/disk/by-id/lvm-pv-uuid-") {
					stable = a
					break
				}
			}
		}
		hidden = append(hidden, fmt.Sprintf("PV %s of VG %s (%s rejects it as %s, and no accept matches any of %s)",
			pv.Name, pv.VG, v.Entry, v.Alias, strings.Join(aliases, ", ")))
	}
	if first == nil {
		return false
	}
	p.add(Finding{ID: LVMFilterHidesPV, Object: "desired:lvm.globalFilter",
		Message:  "the declared global_filter would hide PVs in use, so keel does not write lvm.conf: " + strings.Join(hidden, "; "),
		Expected: "every PV of every VG accepted", Observed: quoteList(entries),
		Remedy: fmt.Sprintf("declare an accept for PV %s in lvm.globalFilter, e.g. %q, or remove the reject that matches it", first.Name, "^"+regexp.QuoteMeta(stable)+"$"),
	})
	return true
}

// pvAliases lists the names under /dev that LVM's filter sees for a PV:
// LVM's own name, the kernel name, /dev/mapper/<dm name> for a dm device,
// the /dev/disk/by-id and /dev/disk/by-path links, and an LV's names
// (lvAliases) when the PV is an LV. by-uuid, by-partuuid, by-label and
// by-diskseq links are not probed: an accept naming a PV only by one of
// those is judged not to match, so keel refuses rather than hides.
func (p *planner) pvAliases(pv *model.PV) []string {
	out := []string{pv.Name}
	add := func(names ...string) {
		for _, n := range names {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	if lv := p.lvOfPV(pv); lv != nil {
		add(p.lvAliases(lv)...)
	}
	dev := pv.Device
	if dev == "" {
		dev = p.h.Device(pv.Name)
	}
	if dev != "" {
		add("/dev/" + dev)
		if q := p.h.Queues[dev]; q != nil && q.DMName != "" {
			add("/dev/mapper/" + q.DMName)
		}
		for _, id := range p.h.ByID[dev] {
			add("/dev/disk/by-id/" + id)
		}
		for _, id := range p.h.ByPath[dev] {
			add("/dev/disk/by-path/" + id)
		}
	}
	for _, id := range pv.ByID {
		add("/dev/disk/by-id/" + strings.TrimPrefix(id, "/dev/disk/by-id/"))
	}
	return out
}

// checkDeclaredFilter reports a declared filter that lets LVs holding VM
// disks through while LVs are scanned (scan_lvs declared or observed on):
// keel would write it faithfully, so the warning is about the desired state.
func (p *planner) checkDeclaredFilter(entries []string, scanLVs *bool) {
	scan, _ := p.lvmBool("devices/scan_lvs")
	if scanLVs != nil {
		scan = *scanLVs
	}
	f, err := lvmregex.NewFilter(entries)
	if !scan || err != nil {
		return // keel vet reports a filter it cannot model
	}
	if seen := p.leakingVMDisks(f, p.vmDiskLVs()); len(seen) > 0 {
		p.add(Finding{ID: LVMGlobalFilter, Object: "desired:lvm.globalFilter",
			Message:  "the declared global_filter does not hide VM disks while LVs are scanned: " + strings.Join(seen, "; "),
			Expected: "every LV holding a VM disk rejected", Observed: quoteList(entries),
			Remedy: `declare lvm: globalFilter: reject: ["` + vmDiskReject[2:len(vmDiskReject)-1] + `"] and no accept matching a VM disk's name`,
		})
	}
}

// isVMDiskName reports whether an LV is named as Proxmox VE names VM disks
// and their companions (vm-100-disk-0, base-101-disk-1, vm-100-cloudinit,
// vm-100-state-snap1), or the snapshots of a disk, which hold the same
// guest data: pve-storage names a thin snapshot snap_<volname>_<snap>
// (src/PVE/Storage/LvmThinPlugin.pm, volume_snapshot) and activates it
// with lvchange -ay -K (activate_volume), so that while a backup or clone
// reads it, it is an active LV holding the guest's own PVs. It is the
// regex ^(snap_)?(vm|base)-[0-9]+- written out, as every check runs it
// over every LV.
func isVMDiskName(name string) bool {
	name = strings.TrimPrefix(name, "snap_")
	rest, ok := strings.CutPrefix(name, "vm-")
	if !ok {
		if rest, ok = strings.CutPrefix(name, "base-"); !ok {
			return false
		}
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	return i > 0 && i < len(rest) && rest[i] == '-'
}

// vmDiskReject is the entry that hides Proxmox VM disks and their
// snapshots by their device-mapper name (pvethin-vm--100--disk--0,
// pvethin-snap_vm--100--disk--0_snap1: lvm.DMName doubles each hyphen of a
// name, and the snapshot's snap_ prefix follows the VG's hyphen).
const vmDiskReject = "r|/dev/mapper/.*-(snap_)?(vm|base)--[0-9]+--disk--[0-9]+|"

// legacyVMDiskReject is the reject keel proposed before it matched
// snapshots (seed 000's): a filter holding it is rewritten with
// vmDiskReject in its place, not beside it.
const legacyVMDiskReject = "r|/dev/mapper/.*-(vm|base)--[0-9]+--disk--[0-9]+|"

// lvAliases lists the names under /dev that udev gives an LV, which LVM's
// filter matches one by one: /dev/dm-N, /dev/block/MAJ:MIN,
// /dev/mapper/<dm name>, /dev/VG/LV and the /dev/disk/by-id links (as listed
// on the test guest; the /dev/disk/by-diskseq link is not modelled).
func (p *planner) lvAliases(lv *model.LV) []string {
	buf, ends := p.appendLVAliases(nil, nil, lv)
	out := make([]string, len(ends))
	start := 0
	for k, end := range ends {
		out[k], start = string(buf[start:end]), end
	}
	return out
}

// appendLVAliases writes lvAliases end to end into buf, each ending at the
// offset it appends to ends (lvmregex.Filter.DecideJoined): it runs once
// per VM disk on every check, and so reuses one buffer.
func (p *planner) appendLVAliases(buf []byte, ends []int, lv *model.LV) ([]byte, []int) {
	dmName := lv.DMName
	if dmName == "" {
		dmName = lvm.Split(lv.FullName).DMName()
	}
	if lv.Minor >= 0 && lv.Active {
		buf = strconv.AppendInt(append(buf, "/dev/dm-"...), int64(lv.Minor), 10)
		ends = append(ends, len(buf))
		buf = strconv.AppendInt(append(buf, "/dev/block/"...), int64(lv.Major), 10)
		buf = strconv.AppendInt(append(buf, ':'), int64(lv.Minor), 10)
		ends = append(ends, len(buf))
	}
	buf = append(append(buf, "/dev/mapper/"...), dmName...)
	ends = append(ends, len(buf))
	buf = append(append(append(append(buf, "/dev/"...), lv.VG...), '/'), lv.Name...)
	ends = append(ends, len(buf))
	buf = append(append(buf, "/dev/disk/by-id/dm-name-"...), dmName...)
	ends = append(ends, len(buf))
	if vg := p.h.VGs[lv.VG]; vg != nil && vg.UUID != "" && lv.UUID != "" {
		buf = lvm.AppendDMUUID(append(buf, "/dev/disk/by-id/dm-uuid-"...), vg.UUID, lv.UUID)
		ends = append(ends, len(buf))
	}
	return buf, ends
}

// vmDiskLVs returns the LVs that hold (or will hold) VM disks: those named
// as Proxmox names disks, else one such disk imagined in each VG, so that a
// host without VMs yet is judged the same.
func (p *planner) vmDiskLVs() []*model.LV {
	var out []*model.LV
	for _, key := range p.sortedLVKeys() {
		if lv := p.h.LVs[key]; !lv.Hidden && isVMDiskName(lv.Name) {
			out = append(out, lv)
		}
	}
	if len(out) > 0 {
		return out
	}
	vgs := slices.Sorted(maps.Keys(p.h.VGs))
	if len(vgs) == 0 {
		vgs = []string{"pve"}
	}
	for _, vg := range vgs {
		out = append(out, &model.LV{VG: vg, Name: "vm-100-disk-0", FullName: vg + "/vm-100-disk-0", Minor: -1})
	}
	return out
}

// auditLVMConf applies the reference rule for the filter: with scan_lvs on,
// global_filter must hide every LV that holds a VM disk, or the host sees
// (and may activate) the guests' own VGs. It is judged with LVM's alias rule
// (lvm/lvmregex): Proxmox's stock filter rejects only zd and rbd devices,
// and a catch-all accept after the rejects accepts each LV by its /dev/dm-N
// name.
func (p *planner) auditLVMConf() {
	if scan, ok := p.lvmBool("devices/scan_lvs"); ok && scan {
		p.judgeHostFilter(LVMConfObject, "scan_lvs is 1")
	}
}

// judgeHostFilter reports the host's global_filter when it does not hide
// every LV holding a VM disk, on object, with why LVs are scanned: in audit
// mode because scan_lvs is 1 on the host, in a plan because the desired
// state turns scanLVs on without declaring a filter (keel then leaves the
// filter as the host has it).
func (p *planner) judgeHostFilter(object, why string) {
	got := parseLVMList(p.h.LVMConfig.Values["devices/global_filter"])
	if len(got) == 0 {
		got = []string{"a|.*|"} // LVM's default
	}
	f, err := lvmregex.NewFilter(got)
	if err != nil {
		p.add(Finding{ID: LVMGlobalFilter, Object: object,
			Message:  fmt.Sprintf("%s and keel cannot tell whether global_filter hides VM disks: %v", why, err),
			Expected: "a global_filter that rejects VM disks", Observed: quoteList(got),
			Remedy: "rewrite devices/global_filter in LVM's regex dialect, e.g. " + quoteList([]string{vmDiskReject}),
		})
		return
	}
	disks := p.vmDiskLVs()
	seen := p.leakingVMDisks(f, disks)
	if len(seen) == 0 {
		return
	}
	p.add(Finding{ID: LVMGlobalFilter, Object: object,
		Message:  why + " and global_filter does not hide VM disks, so the host sees the guests' VGs: " + strings.Join(seen, "; ") + p.filterNotInForce(),
		Expected: "every LV holding a VM disk rejected", Observed: quoteList(got),
		Remedy: p.filterRemedy(got, disks),
	})
}

// leakingVMDisks lists the disks the filter accepts, each with the entry
// and alias that let it through.
func (p *planner) leakingVMDisks(f *lvmregex.Filter, disks []*model.LV) []string {
	verdicts := p.decideDisks(f, disks)
	var seen []string
	for i, lv := range disks {
		v := verdicts[i]
		if !v.Accepted {
			continue
		}
		why := "no entry matches any of its names"
		if v.Alias != "" {
			why = fmt.Sprintf("%s accepts it as %s", v.Entry, v.Alias)
		}
		seen = append(seen, fmt.Sprintf("%s (%s)", lv.FullName, why))
	}
	return seen
}

// decideDisksChunk is how many disks one goroutine of decideDisks judges.
const decideDisksChunk = 256

// decideDisks runs the filter over every disk's aliases, on all CPUs when
// there are thousands: each disk costs a regex match per alias and entry,
// and a check of 2,000 VM disks spent most of its plan here (a few ms on
// the build machine, tens under TCG), after the probe pass, with the CPUs
// otherwise idle. The verdicts are in the disks' order, whatever ran first.
func (p *planner) decideDisks(f *lvmregex.Filter, disks []*model.LV) []lvmregex.Verdict {
	out := make([]lvmregex.Verdict, len(disks))
	f.Expect(len(disks)) // each disk has one alias at least
	decide := func(lo, hi int) {
		var buf []byte
		var ends []int
		for i := lo; i < hi; i++ {
			buf, ends = p.appendLVAliases(buf[:0], ends[:0], disks[i])
			out[i] = f.DecideJoined(buf, ends)
		}
	}
	if len(disks) <= decideDisksChunk || runtime.GOMAXPROCS(0) == 1 {
		decide(0, len(disks))
		return out
	}
	var wg sync.WaitGroup
	for lo := 0; lo < len(disks); lo += decideDisksChunk {
		wg.Go(func() { decide(lo, min(lo+decideDisksChunk, len(disks))) })
	}
	wg.Wait()
	return out
}

// filterRemedy proposes the current filter with the VM-disk reject first
// and catch-all accepts dropped, when that hides the disks; otherwise it
// says what to remove.
func (p *planner) filterRemedy(got []string, disks []*model.LV) string {
	proposal := []string{vmDiskReject}
	for _, e := range got {
		if e != vmDiskReject && e != legacyVMDiskReject && !(strings.HasPrefix(e, "a") && len(e) > 2 && e[2:len(e)-1] == ".*") {
			proposal = append(proposal, e)
		}
	}
	f, err := lvmregex.NewFilter(proposal)
	if err == nil {
		for _, lv := range disks {
			if f.Decide(p.lvAliases(lv)).Accepted {
				err = fmt.Errorf("an accept still matches %s", lv.FullName)
				break
			}
		}
	}
	if err != nil {
		return "remove the accepts that match VM disks' names from devices/global_filter and reject " + vmDiskReject
	}
	return "set in lvm.conf: devices { global_filter = " + lvmConfList(proposal) + " } (or declare lvm.globalFilter.reject in keel's desired state)"
}

// lvmConfList writes entries as an lvm.conf string array; in a double-quoted
// lvm.conf string only \" and \\ are escapes.
func lvmConfList(entries []string) string {
	q := make([]string, len(entries))
	for i, e := range entries {
		q[i] = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(e) + `"`
	}
	return "[ " + strings.Join(q, ", ") + " ]"
}

// stackedVGs returns, for every observed VG with a PV that is an LV, the
// "vg/lv" of those LVs.
func (p *planner) stackedVGs() map[string][]string {
	if p.stacked != nil {
		return p.stacked
	}
	out := map[string][]string{}
	for _, name := range slices.Sorted(maps.Keys(p.h.PVs)) {
		pv := p.h.PVs[name]
		if pv.VG == "" {
			continue
		}
		if lv := p.lvOfPV(pv); lv != nil {
			out[pv.VG] = append(out[pv.VG], lv.FullName)
		}
	}
	p.stacked = out
	return out
}

// lvOfPV returns the LV a PV sits on, or nil for a disk.
func (p *planner) lvOfPV(pv *model.PV) *model.LV {
	if rest, ok := strings.CutPrefix(pv.Name, "/dev/mapper/"); ok {
		return p.lvByDM[rest]
	}
	if rest, ok := strings.CutPrefix(pv.Name, "/dev/"); ok {
		return p.h.LVs[rest]
	}
	return nil
}

// planStacking checks what depends on VGs stacked on LVs, in both modes:
// scan_lvs (declared VGs on LVs need it), activation at boot, thin pools
// on VDO, and Proxmox storages on VDO without discard on removal.
func (p *planner) planStacking() {
	scan, scanKnown := p.lvmBool("devices/scan_lvs")
	if !p.audit {
		for _, vg := range slices.Sorted(maps.Keys(p.d.VolumeGroups)) {
			for _, path := range p.d.VolumeGroups[vg].PVs {
				lv, ok := p.isLVPath(path)
				if !ok || !scanKnown || scan {
					continue
				}
				declared := p.d.LVM != nil && p.d.LVM.ScanLVs != nil && *p.d.LVM.ScanLVs
				if declared {
					continue // planLVMConf already reports and fixes it
				}
				p.add(Finding{ID: LVMScanLVs, Object: vg,
					Message:  fmt.Sprintf("VG %s is declared on LV %s but devices/scan_lvs is 0: LVM ignores LVs as PVs", vg, lv),
					Expected: "scan_lvs=1", Observed: "scan_lvs=0",
					Remedy: "declare lvm: scanLVs: true (with a global_filter that rejects guest disks)",
				})
				break
			}
		}
	}
	stacked := p.stackedVGs()
	for _, vg := range slices.Sorted(maps.Keys(stacked)) {
		p.checkActivation(vg, stacked[vg])
	}
	// Every thin pool on the host, declared or not: keel vet refuses to
	// declare one on VDO, so this is how such a pool shows up.
	for _, key := range slices.Sorted(maps.Keys(p.h.ThinPools)) {
		p.checkThinOnVDO(p.h.ThinPools[key])
	}
	p.checkProxmox(stacked)
}

// checkThinOnVDO reports a thin pool whose VG has a PV on a VDO LV: two
// layers LVM does not know are one. A thin pool whose data LV is a VDO LV
// (--pooldatavdo, model.ThinPool.DataVDO) has its PVs on disks and is not
// reported: LVM made that layout as one pool (plan_thin_vdo.go).
func (p *planner) checkThinOnVDO(tp *model.ThinPool) {
	v := p.h.VGs[tp.VG]
	if v == nil {
		return
	}
	for _, pvName := range v.PVs {
		pv := p.h.PVs[pvName]
		if pv == nil {
			continue
		}
		if lv := p.lvOfPV(pv); lv != nil && lv.SegType == "vdo" {
			p.add(Finding{ID: ThinOnVDO, Object: tp.LV,
				Message:  fmt.Sprintf("thin pool %s is in VG %s, whose PV %s is the VDO LV %s: two thin layers", tp.LV, tp.VG, pvName, lv.FullName),
				Expected: "thick LVs on VDO", Observed: "thin pool on VDO",
				Remedy: "rebuild: keep the VG on VDO thick",
			})
			return
		}
	}
}

// checkProxmox reports Proxmox lvm storages on a VG stacked on a VDO LV
// that neither discard nor zero removed volumes.
func (p *planner) checkProxmox(stacked map[string][]string) {
	if p.h.Proxmox == nil {
		return
	}
	if pve := p.h.Proxmox; pve.Unreadable != "" {
		p.add(Finding{ID: PVEStorageCfgUnreadable, Object: p.h.PVEStorageCfg,
			Message:  fmt.Sprintf("this is a Proxmox VE node (%s) but its storage.cfg could not be read (%s): keel cannot tell which VGs a Proxmox storage shares, so it counts every VG shared and removes no absent LV", pve.Node, pve.Unreadable),
			Expected: "storage.cfg readable", Observed: pve.Unreadable,
			Remedy: "systemctl status pve-cluster (its pmxcfs mounts /etc/pve); keel reads storage.cfg again on its next pass",
		})
	}
	storages := append([]model.PVEStorage(nil), p.h.Proxmox.Storages...)
	sort.SliceStable(storages, func(i, j int) bool { return storages[i].ID < storages[j].ID })
	for _, s := range storages {
		if s.Type != "lvm" || s.VG == "" {
			continue
		}
		onVDO := false
		for _, key := range stacked[s.VG] {
			if lv := p.h.LVs[key]; lv != nil && lv.SegType == "vdo" {
				onVDO = true
			}
		}
		if !onVDO {
			continue
		}
		if s.Saferemove {
			continue
		}
		observed := "saferemove 0"
		if remove := s.Options["on-volume-remove"]; remove != "" {
			// Not an option of any pve-storage: Proxmox VE's section
			// config parser warns about the line and ignores it.
			observed += fmt.Sprintf("; on-volume-remove %s is no pve-storage option, Proxmox VE ignores it", remove)
		}
		p.add(Finding{ID: PVEDiscardOnRemove, Object: "pve:" + s.ID,
			Message: fmt.Sprintf("Proxmox storage %s (VG %s on VDO) removes disks without wiping them, so VDO keeps their blocks%s",
				s.ID, s.VG, pveSaferemoveWipe(p.h.PVEStorageVersion)),
			Expected: "saferemove 1", Observed: observed,
			Remedy: fmt.Sprintf("pvesm set %s --saferemove 1", s.ID),
		})
	}
}

// pveSaferemoveWipe says how the installed pve-storage (version, "" when
// unknown) wipes a removed volume once saferemove is set, as read in
// proxmox/pve-storage, src/PVE/Storage/LVMPlugin.pm (free_lvm_volumes,
// properties and options):
//
//   - saferemove ("Zero-out data when removing LVs") is an option of the
//     lvm plugin in every version since the plugin architecture (commit
//     1dc01b9), and in 9.1.7, the newest read; with it pve-storage renames
//     the LV del-<name>, zeroes it in a worker and removes it.
//   - Up to 9.0.13 the zeroes come from cstream at 10 MB/s unless
//     saferemove_throughput says otherwise.
//   - From 9.0.14 (commit 728d8f3, "use blkdiscard when supported instead
//     cstream") from blkdiscard --zeroout in saferemove-stepsize steps
//     (32 MiB) where the device takes WRITE ZEROES
//     (queue/write_zeroes_max_bytes above 0), else from cstream as before.
//   - No version has an on-volume-remove option, nor saferemove_discard
//     (proposed on pve-devel in August 2025, not merged): a discard before
//     removal is not among pve-storage's choices.
//
// Zeroes are enough for VDO, which keeps no data block for an all-zero
// block (the kernel's Documentation/admin-guide/device-mapper/vdo-design.rst).
func pveSaferemoveWipe(version string) string {
	v, ok := debianVersion(version)
	switch {
	case !ok:
		return ""
	case v.atLeast(9, 0, 14):
		return fmt.Sprintf("; with saferemove 1, pve-storage %s zeroes a removed disk (blkdiscard --zeroout, or cstream where the device takes no write-zeroes) and VDO keeps no block for zeroes", version)
	}
	return fmt.Sprintf("; with saferemove 1, pve-storage %s zeroes a removed disk with cstream, at most 10 MB/s unless saferemove_throughput is set, and VDO keeps no block for zeroes", version)
}

// debVersion is the numeric upstream part of a Debian version, major,
// minor and patch ("9.1.7" of "9.1.7", "8.2.9" of "1:8.2.9~bpo1").
type debVersion [3]int

// debianVersion reads the first three dot-separated numbers of a Debian
// version after its epoch; ok is false when there are none.
func debianVersion(s string) (v debVersion, ok bool) {
	if _, after, found := strings.Cut(s, ":"); found {
		s = after
	}
	for i, f := range strings.SplitN(s, ".", 3) {
		end := strings.IndexFunc(f, func(r rune) bool { return r < '0' || r > '9' })
		if end < 0 {
			end = len(f)
		}
		if end == 0 {
			return v, i > 0
		}
		n, err := strconv.Atoi(f[:end])
		if err != nil {
			return v, false
		}
		v[i] = n
		if end < len(f) {
			break // "7~bpo1": nothing numeric follows
		}
	}
	return v, true
}

// atLeast reports whether v is major.minor.patch or later.
func (v debVersion) atLeast(major, minor, patch int) bool {
	for i, w := range [3]int{major, minor, patch} {
		if v[i] != w {
			return v[i] > w
		}
	}
	return true
}
