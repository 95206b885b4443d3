package plan

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/keel-storage/keel/lvm/conffile"
	"github.com/keel-storage/keel/probes/model"
)

// Files of LVM's config cascade keel writes, as findings name them.
const (
	lvmConfPath      = "/etc/lvm/lvm.conf"
	lvmLocalConfPath = "/etc/lvm/lvmlocal.conf"
)

// settingOfKey maps the key of the finding planLVMConf remedies to the
// setting it is about.
var settingOfKey = map[string]string{
	Finding{ID: LVMScanLVs, Object: LVMConfObject}.Key():         "devices/scan_lvs",
	Finding{ID: LVMGlobalFilter, Object: LVMConfObject}.Key():    "devices/global_filter",
	Finding{ID: LVMDevicesFile, Object: LVMConfObject}.Key():     "devices/use_devicesfile",
	Finding{ID: LVMRaidFaultPolicy, Object: LVMConfObject}.Key(): "activation/raid_fault_policy",
}

// lvmSetting is one managed setting of an lvm.conf change: its path, the
// declared value as lvmconfig prints it, and how to drop it from the change.
type lvmSetting struct {
	path string
	want string
	drop func()
}

// settings lists the settings ch asserts.
func (ch *LVMConfChange) settings() []lvmSetting {
	var out []lvmSetting
	if ch.ScanLVs != nil {
		out = append(out, lvmSetting{"devices/scan_lvs", boolDigit(*ch.ScanLVs), func() { ch.ScanLVs = nil }})
	}
	if ch.GlobalFilter != nil {
		out = append(out, lvmSetting{"devices/global_filter", quoteList(ch.GlobalFilter), func() { ch.GlobalFilter = nil }})
	}
	if ch.UseDevicesFile != nil {
		out = append(out, lvmSetting{"devices/use_devicesfile", boolDigit(*ch.UseDevicesFile), func() { ch.UseDevicesFile = nil }})
	}
	if ch.RaidFaultPolicy != "" {
		out = append(out, lvmSetting{"activation/raid_fault_policy", strconv.Quote(ch.RaidFaultPolicy), func() { ch.RaidFaultPolicy = "" }})
	}
	return out
}

// fileValue returns the value the last assignment of path in f states, in
// the form settings() gives the declared one; ok is false when f does not
// assign path.
func fileValue(f *conffile.File, path string) (string, bool) {
	var a *conffile.Assignment
	for i := range f.Assigns {
		if f.Assigns[i].Path == path {
			a = &f.Assigns[i]
		}
	}
	if a == nil {
		return "", false
	}
	if path == "devices/global_filter" {
		var l []string
		for _, v := range a.Values {
			l = append(l, conffile.Unescape(v.Text))
		}
		return quoteList(l), true
	}
	if b, ok := f.Bool(path); ok {
		return boolDigit(b), true
	}
	if !a.IsList && len(a.Values) == 1 && a.Values[0].Kind == conffile.TString {
		// A string setting, as lvmconfig prints it (quoted).
		return strconv.Quote(conffile.Unescape(a.Values[0].Text)), true
	}
	return "", true
}

// gateLVMConf drops from ch every setting keel must not or cannot write,
// each with a finding, and returns the settings dropped:
//
//   - a setting whose value in force comes from neither lvm.conf nor
//     lvmlocal.conf. LVM reads lvm.conf, then lvmlocal.conf, then the tag
//     files lvm_<tag>.conf, each later one winning (lvm2
//     lib/commands/toolcontext.c: _init_lvm_conf, _load_config_file,
//     _init_tag_configs, _merge_config_files; lvm.conf(5), "config
//     cascade"); profiles cannot hold devices settings (none is
//     CFG_PROFILABLE in lib/config/config_settings.h). When those two files
//     already state the declared value and LVM still reads another, a
//     write there changes nothing and the action would repeat on every
//     pass. A setting lvmlocal.conf states is written there by the
//     applier (reconcile/apply/lvmconf), where it takes effect.
//   - use_devicesfile turned on while the devices file misses a PV of a VG:
//     LVM would hide that PV, and its VG, at once (lvmdevices(8)).
func (p *planner) gateLVMConf(ch *LVMConfChange) map[string]bool {
	dropped := map[string]bool{}
	cfg := p.h.LVMConfig
	main, err1 := conffile.Parse([]byte(cfg.LVMConf))
	local, err2 := conffile.Parse([]byte(cfg.LVMLocalConf))
	for _, s := range ch.settings() {
		if cfg.LVMConf == "" || err1 != nil || err2 != nil {
			break // the applier refuses a file it cannot parse
		}
		stated, where := fileValue(main, s.path)
		file := lvmConfPath
		if v, ok := fileValue(local, s.path); ok {
			stated, where, file = v, true, lvmLocalConfPath
		}
		if !where || stated != s.want {
			continue // the write changes the file the value comes from
		}
		s.drop()
		dropped[s.path] = true
		name := s.path[strings.IndexByte(s.path, '/')+1:]
		p.add(Finding{ID: LVMConfOverridden, Object: LVMConfObject,
			Message: fmt.Sprintf("%s already says %s=%s, yet LVM reads %s: a tag file (lvm_<tag>.conf, tags section) or LVM_SYSTEM_DIR sets it, which keel does not write",
				file, name, s.want, cfg.Values[s.path]),
			Expected: name + "=" + s.want, Observed: name + "=" + cfg.Values[s.path],
			Remedy: "lvmconfig --typeconfig full " + s.path + "; set it in the file that wins, or drop it from keel's desired state",
		})
	}
	if ch.UseDevicesFile != nil && *ch.UseDevicesFile {
		if hidden := p.hiddenByDevicesFile(); len(hidden) > 0 {
			ch.UseDevicesFile = nil
			dropped["devices/use_devicesfile"] = true
			df := cfg.DevicesFile
			var named []string
			for _, pv := range hidden {
				named = append(named, pv+" (VG "+p.h.PVs[pv].VG+")")
			}
			p.add(Finding{ID: LVMDevicesFileMissingPV, Object: df.Path,
				Message:  fmt.Sprintf("keel does not turn use_devicesfile on: %s does not list %s, which LVM would hide at once", df.Path, strings.Join(named, ", ")),
				Expected: "every PV of a VG in the devices file", Observed: fmt.Sprintf("%d entries, %d PVs missing", len(df.Entries), len(hidden)),
				Remedy: p.addDevRemedy(hidden) + " (or drop lvm.useDevicesFile); keel then turns the devices file on",
			})
		}
	}
	return dropped
}

// devicesFileInForce reports whether LVM uses the devices file now: with
// use_devicesfile=1 and the file present; without the file the feature is
// off (lvmdevices(8), "disabling and overriding").
func (p *planner) devicesFileInForce() bool {
	on, _ := p.lvmBool("devices/use_devicesfile")
	return on && p.h.LVMConfig.DevicesFile != nil
}

// filterNotInForce is the clause filter findings carry while the devices
// file decides which devices LVM uses, "" otherwise.
func (p *planner) filterNotInForce() string {
	if !p.devicesFileInForce() {
		return ""
	}
	return " (global_filter is not in force: use_devicesfile=1 and " + p.h.LVMConfig.DevicesFile.Path + " exists, so LVM uses only the devices it lists)"
}

// entryMatches reports whether a devices-file entry names the device k
// (kernel name) or the PV pv (nil for a device that is no PV): by PVID,
// which lvm2 checks on every match (device_id.c), else by the name the
// entry last recorded (DEVNAME, or IDNAME of IDTYPE=devname).
func entryMatches(e model.DeviceEntry, k string, pv *model.PV) bool {
	if pv != nil && e.PVID != "" && e.PVID != "none" {
		return e.PVID == strings.ReplaceAll(pv.UUID, "-", "")
	}
	names := []string{e.DevName}
	if e.IDType == "devname" {
		names = append(names, e.IDName)
	}
	for _, n := range names {
		if n != "" && (n == "/dev/"+k || (pv != nil && n == pv.Name)) {
			return true
		}
	}
	return false
}

// listed reports whether the devices file lists the PV.
func (p *planner) listed(pv *model.PV) bool {
	return slices.ContainsFunc(p.h.LVMConfig.DevicesFile.Entries, func(e model.DeviceEntry) bool {
		return entryMatches(e, pv.Device, pv)
	})
}

// hiddenByDevicesFile lists the PVs of VGs the existing devices file does
// not list; nil when there is no devices file (turning use_devicesfile on
// then changes nothing until lvmdevices creates one).
func (p *planner) hiddenByDevicesFile() []string {
	if p.h.LVMConfig.DevicesFile == nil {
		return nil
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(p.h.PVs)) {
		if pv := p.h.PVs[name]; pv.VG != "" && !p.listed(pv) {
			out = append(out, name)
		}
	}
	return out
}

// planDevicesFile reports, while the devices file is in force, each
// declared PV it does not list (LVM does not see it: the VG cannot be
// created or is incomplete) and each entry that matches no device.
func (p *planner) planDevicesFile() {
	if !p.devicesFileInForce() {
		return
	}
	df := p.h.LVMConfig.DevicesFile
	var declared []string
	if p.d != nil {
		declared = slices.Sorted(maps.Keys(p.d.VolumeGroups))
	}
	for _, vg := range declared {
		for _, path := range p.d.VolumeGroups[vg].PVs {
			if _, isLV := p.isLVPath(path); isLV {
				continue
			}
			k := p.h.Device(path)
			pv := p.h.PVs[p.resolvePV(path)]
			if k == "" && pv == nil {
				continue // vg.missing reports a disk that is not there
			}
			if pv != nil && k == "" {
				k = pv.Device
			}
			if slices.ContainsFunc(df.Entries, func(e model.DeviceEntry) bool { return entryMatches(e, k, pv) }) {
				continue
			}
			p.add(Finding{ID: LVMDevicesFileMissingPV, Object: vg,
				Message:  fmt.Sprintf("PV %s of VG %s (/dev/%s) is not in %s, and with use_devicesfile=1 LVM uses no other device", path, vg, k, df.Path),
				Expected: "listed in " + df.Path, Observed: "not listed",
				Remedy: "lvm lvmdevices --adddev " + path,
			})
		}
	}
	for _, e := range df.Entries {
		if p.entryFound(e) {
			continue
		}
		p.add(Finding{ID: LVMDevicesFileStale, Object: df.Path,
			Message:  fmt.Sprintf("devices file entry IDTYPE=%s IDNAME=%s DEVNAME=%s PVID=%s matches no device of this host", e.IDType, e.IDName, orDot(e.DevName), orDot(e.PVID)),
			Expected: "every entry names a device", Observed: "no device",
			Remedy: staleRemedy(e) + ", once the disk is known to be gone for good",
		})
	}
}

// entryFound reports whether a devices-file entry matches a PV LVM lists
// or a block device the probe saw.
func (p *planner) entryFound(e model.DeviceEntry) bool {
	for _, pv := range p.h.PVs {
		if entryMatches(e, pv.Device, pv) {
			return true
		}
	}
	if e.PVID != "" && e.PVID != "none" {
		return false // a PV LVM does not list: its disk is gone or replaced
	}
	for _, n := range []string{e.DevName, e.IDName} {
		if k := p.h.Device(n); k != "" {
			return true
		}
	}
	return false
}

func orDot(s string) string {
	if s == "" {
		return "."
	}
	return s
}

// addDevRemedy is the command that lists the PVs in the devices file.
func (p *planner) addDevRemedy(pvs []string) string {
	cmds := make([]string, len(pvs))
	for i, pv := range pvs {
		cmds[i] = "lvm lvmdevices --adddev " + pv
	}
	return strings.Join(cmds, "; ")
}

// staleRemedy is the command that drops an entry naming no device:
// lvmdevices --delpvid for a PV's entry, else --deldev by the name the
// entry recorded (lvmdevices(8)).
func staleRemedy(e model.DeviceEntry) string {
	if e.PVID != "" && e.PVID != "none" {
		return "lvm lvmdevices --delpvid " + e.PVID
	}
	if e.DevName != "" {
		return "lvm lvmdevices --deldev " + e.DevName
	}
	return "lvm lvmdevices --deldev " + e.IDName
}
