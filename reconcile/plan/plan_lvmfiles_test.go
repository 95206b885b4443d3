package plan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/schema/spec"
)

// The captures of e2e/lvmfilter/cascade.sh (KEEL_DEVFILE_SNAPSHOT_DIR): a
// host with VG hostvg on /dev/nvme0n1 and a spare PV, lvm.conf behind a
// symlink, and
//   - lvmconf-local: lvmlocal.conf's scan_lvs = 0 winning over lvm.conf's 1;
//   - lvmconf-tag: lvm_<hostname>.conf's scan_lvs = 0 (tags/hosttags = 1)
//     winning over both files, which say 1;
//   - lvmconf-system.devices: the devices file that boot made while
//     use_devicesfile=0, listing only the spare PV;
//   - lvmconf-devfile-on: a devices file in force listing the spare disk
//     and a PV on a loop device since detached (its entry matches no
//     device), and hostvg hidden from LVM.

func lvmConfAction(r Result) *LVMConfChange {
	for _, a := range r.Actions {
		if a.Kind == KindLVMConf {
			return a.LVMConf
		}
	}
	return nil
}

func findingsOf(r Result, id FindingID) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.ID == id {
			out = append(out, f)
		}
	}
	return out
}

// A setting lvmlocal.conf sets is planned (the applier writes it there);
// nothing says it cannot be written.
func TestCascadeLocalSettingIsPlanned(t *testing.T) {
	h := replayHost(t, "lvmconf-local")
	if !strings.Contains(h.LVMConfig.LVMLocalConf, "scan_lvs = 0") {
		t.Fatalf("capture lacks lvmlocal.conf's scan_lvs = 0:\n%s", h.LVMConfig.LVMLocalConf)
	}
	on := true
	r := Plan(&spec.Config{LVM: &spec.LVM{ScanLVs: &on}}, h)
	if ch := lvmConfAction(r); ch == nil || ch.ScanLVs == nil || !*ch.ScanLVs {
		t.Errorf("no lvm.conf action asserting scan_lvs = 1: %+v", r.Actions)
	}
	if f := findingsOf(r, LVMConfOverridden); len(f) > 0 {
		t.Errorf("lvm.conf_overridden raised for a setting keel can write in lvmlocal.conf: %+v", f)
	}
}

// A setting a tag file overrides is not planned: the finding says both
// files keel writes already hold the value, and names what LVM reads.
func TestCascadeTagFileIsReportedNotWritten(t *testing.T) {
	h := replayHost(t, "lvmconf-tag")
	on := true
	r := Plan(&spec.Config{LVM: &spec.LVM{ScanLVs: &on}}, h)
	if ch := lvmConfAction(r); ch != nil {
		t.Errorf("lvm.conf action planned although no write can take effect: %+v", ch)
	}
	f := findingsOf(r, LVMConfOverridden)
	if len(f) != 1 || !strings.Contains(f[0].Message, "/etc/lvm/lvmlocal.conf already says scan_lvs=1, yet LVM reads 0") ||
		f[0].Remedy != "lvmconfig --typeconfig full devices/scan_lvs; set it in the file that wins, or drop it from keel's desired state" {
		t.Errorf("lvm.conf_overridden findings %+v", f)
	}
	if f := findingsOf(r, LVMScanLVs); len(f) != 1 {
		t.Errorf("the drift itself is still reported once (lvm.scan_lvs), got %+v", f)
	}
}

// Turning the devices file on while it misses hostvg's PV is refused by
// name. lvm2 2.03.24 and later set a system.devices that exists while
// use_devicesfile=0 aside on their next command (dev-cache.c,
// devices_file_rename_unused), so only an older lvm2 shows keel that
// state: here the capture with every PV visible and use_devicesfile=0,
// with the system.devices the same boot made (listing only the spare disk).
func TestDevicesFileOnRefusedWhenItHidesAPV(t *testing.T) {
	h := replayHost(t, "lvmconf-local")
	b, err := os.ReadFile(filepath.Join(ownSnapshotDir, "lvmconf-system.devices"))
	if err != nil {
		t.Fatal(err)
	}
	entries := probes.ParseDevicesFile(b)
	if len(entries) != 1 {
		t.Fatalf("system.devices read as %+v, want the spare disk's entry", entries)
	}
	if e := entries[0]; e.IDType == "" || e.IDName == "" || len(e.PVID) != 32 || !strings.HasPrefix(e.DevName, "/dev/") {
		t.Errorf("entry %+v: want IDTYPE, IDNAME, a 32-character PVID and DEVNAME", e)
	}
	h.LVMConfig.DevicesFile = &model.DevicesFile{Path: "/etc/lvm/devices/system.devices", Entries: entries}
	on := true
	r := Plan(&spec.Config{LVM: &spec.LVM{UseDevicesFile: &on}}, h)
	if ch := lvmConfAction(r); ch != nil && ch.UseDevicesFile != nil {
		t.Errorf("use_devicesfile = 1 planned while system.devices misses hostvg's PV: %+v", ch)
	}
	f := findingsOf(r, LVMDevicesFileMissingPV)
	if len(f) != 1 || !strings.Contains(f[0].Message, "/dev/nvme0n1 (VG hostvg)") ||
		f[0].Remedy != "lvm lvmdevices --adddev /dev/nvme0n1 (or drop lvm.useDevicesFile); keel then turns the devices file on" {
		t.Errorf("lvm.devices_file_missing_pv findings %+v", f)
	}
	// Off, the file decides nothing: no finding about its entries.
	if f := findingsOf(Audit(h), LVMDevicesFileStale); len(f) > 0 {
		t.Errorf("stale entries reported while the devices file is off: %+v", f)
	}
	// Every PV listed: the write goes ahead.
	for _, pv := range h.PVs {
		h.LVMConfig.DevicesFile.Entries = append(h.LVMConfig.DevicesFile.Entries,
			model.DeviceEntry{IDType: "devname", IDName: pv.Name, DevName: pv.Name, PVID: strings.ReplaceAll(pv.UUID, "-", "")})
	}
	if ch := lvmConfAction(Plan(&spec.Config{LVM: &spec.LVM{UseDevicesFile: &on}}, h)); ch == nil || ch.UseDevicesFile == nil {
		t.Errorf("use_devicesfile not planned with every PV listed: %+v", ch)
	}
}

// In force, the declared PV the file misses and the entry matching no PV
// are findings, and the filter findings say the filter decides nothing.
func TestDevicesFileInForce(t *testing.T) {
	h := replayHost(t, "lvmconf-devfile-on")
	if _, ok := h.VGs["hostvg"]; ok {
		t.Fatal("capture shows hostvg: the devices file was not in force")
	}
	on := true
	d := &spec.Config{
		LVM:          &spec.LVM{UseDevicesFile: &on, GlobalFilter: &spec.GlobalFilter{Reject: []string{"/dev/zd.*"}}},
		VolumeGroups: map[string]spec.VolumeGroup{"hostvg": {PVs: []string{"/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0"}}},
	}
	r := Plan(d, h)
	f := findingsOf(r, LVMDevicesFileMissingPV)
	if len(f) != 1 || f[0].Object != "hostvg" || f[0].Remedy != "lvm lvmdevices --adddev /dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0" {
		t.Errorf("lvm.devices_file_missing_pv findings %+v", f)
	}
	stale := findingsOf(r, LVMDevicesFileStale)
	if len(stale) != 1 || !strings.HasPrefix(stale[0].Remedy, "lvm lvmdevices --delpvid ") {
		t.Errorf("lvm.devices_file_stale findings %+v", stale)
	}
	filter := findingsOf(r, LVMGlobalFilter)
	if !slices.ContainsFunc(filter, func(f Finding) bool { return strings.Contains(f.Message, "global_filter is not in force") }) {
		t.Errorf("filter findings do not say the filter is not in force: %+v", filter)
	}
}

// ParseDevicesFile-level rules on the entry matcher: a PV's entry matches
// by PVID whatever its device is called now.
func TestEntryMatchesByPVIDFirst(t *testing.T) {
	pv := &model.PV{Name: "/dev/sdb", UUID: "abcdef-ghij", Device: "sdb"}
	if !entryMatches(model.DeviceEntry{IDType: "sys_wwid", IDName: "x", DevName: "/dev/sdc", PVID: "abcdefghij"}, "sdb", pv) {
		t.Error("an entry with the PV's PVID and an old DEVNAME does not match")
	}
	if entryMatches(model.DeviceEntry{IDType: "sys_wwid", IDName: "x", DevName: "/dev/sdb", PVID: "other"}, "sdb", pv) {
		t.Error("an entry with another PVID matches by name")
	}
	if !entryMatches(model.DeviceEntry{IDType: "devname", IDName: "/dev/sdb"}, "sdb", nil) {
		t.Error("an IDTYPE=devname entry does not match its device")
	}
}
