package plan

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/keel-storage/keel/lvm/lvmregex"
	"github.com/keel-storage/keel/schema"
	"github.com/keel-storage/keel/schema/spec"
)

// TestAuditGlobalFilter replays captures of e2e/lvmfilter: a VG on an LV,
// a VM disk LV vdovg/vm-100-disk-0 holding the guest's own VG, scan_lvs=1,
// and lvm.conf holding each filter in turn. On the guest, vgs showed the
// guest's VG with Proxmox's stock filter and hid it with seed 000's rejects
// and with keel's filter for examples/proxmox-vdo-thick.cue; the audit must
// say the same.
func TestAuditGlobalFilter(t *testing.T) {
	for _, c := range []struct {
		snapshot string
		raise    bool
	}{
		{"lvmfilter-pve-stock", true},
		// keel's filter is seed 000's list exactly; the capture under
		// seed 000's filter differs only in its time and free memory, so
		// it is not kept twice.
		{"lvmfilter-keel-proxmox-vdo-thick", false},
	} {
		r := Audit(replayHost(t, c.snapshot))
		var f *Finding
		for i := range r.Findings {
			if r.Findings[i].ID == "lvm.global_filter" {
				f = &r.Findings[i]
			}
		}
		if (f != nil) != c.raise {
			t.Errorf("%s: lvm.global_filter raised %v, want %v (%+v)", c.snapshot, f != nil, c.raise, f)
			continue
		}
		if f == nil {
			continue
		}
		if !strings.Contains(f.Message, "vdovg/vm-100-disk-0 (no entry matches any of its names)") {
			t.Errorf("%s: message does not name the VM disk and why: %s", c.snapshot, f.Message)
		}
		// The remedy's filter, written into lvm.conf, is what seed 000
		// wrote with its VM-disk reject widened to the disks' snapshots
		// (snap_): the capture under seed 000's shows the guest VG
		// hidden, and the wider reject matches every name it matches
		// (lvmregex TestVMDiskRejectSnapshots).
		want := `global_filter = [ "r|/dev/mapper/.*-(snap_)?(vm|base)--[0-9]+--disk--[0-9]+|", "r|/dev/zd.*|", "r|/dev/rbd.*|" ]`
		if !strings.Contains(f.Remedy, want) {
			t.Errorf("%s: remedy %q, want it to contain %q", c.snapshot, f.Remedy, want)
		}
	}
}

// TestFilterConverged: with keel's filter for examples/proxmox-vdo-thick.cue
// in lvm.conf (captured on the guest before the example's VM-disk reject
// matched snapshots), the example's lvm settings with that reject plan
// nothing; with the example's own, they plan one rewrite that adds it
// (TestFilterWidened).
func TestFilterConverged(t *testing.T) {
	h := replayHost(t, "lvmfilter-keel-proxmox-vdo-thick")
	cfg, err := schema.Load("../../examples/proxmox-vdo-thick.cue")
	if err != nil {
		t.Fatal(err)
	}
	lvm := cfg.LVM
	if lvm.GlobalFilter == nil {
		t.Fatal("the example declares no global_filter")
	}
	gf := *lvm.GlobalFilter
	gf.Reject = slices.Clone(gf.Reject)
	i := slices.Index(gf.Reject, vmDiskReject[2:len(vmDiskReject)-1])
	if i < 0 {
		t.Fatalf("the example's rejects %q lack %s", gf.Reject, vmDiskReject)
	}
	gf.Reject[i] = legacyVMDiskReject[2 : len(legacyVMDiskReject)-1]
	lvm.GlobalFilter = &gf
	r := Plan(&spec.Config{LVM: lvm, Removal: cfg.Removal, Proxmox: cfg.Proxmox}, h)
	for _, a := range r.Actions {
		if a.Kind == KindLVMConf {
			t.Errorf("lvm.conf action on a host holding keel's own filter: %+v", a.LVMConf)
		}
	}
	if keys := keys(r.Findings); slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, "lvm.") }) {
		t.Errorf("lvm findings: %v", keys)
	}
}

// TestFilterWidened: on the host holding the filter keel wrote for
// examples/proxmox-vdo-thick.cue before its VM-disk reject matched
// snapshots, the example plans one rewrite, which puts the wider reject
// first.
func TestFilterWidened(t *testing.T) {
	h := replayHost(t, "lvmfilter-keel-proxmox-vdo-thick")
	cfg, err := schema.Load("../../examples/proxmox-vdo-thick.cue")
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, a := range Plan(&spec.Config{LVM: cfg.LVM, Removal: cfg.Removal, Proxmox: cfg.Proxmox}, h).Actions {
		if a.Kind == KindLVMConf && a.LVMConf != nil && a.LVMConf.GlobalFilter != nil {
			got = append(got, a.LVMConf.GlobalFilter)
		}
	}
	if len(got) != 1 || !slices.Contains(got[0], vmDiskReject) {
		t.Errorf("filter rewrites %q, want one holding %s", got, vmDiskReject)
	}
}

// TestVMDiskRejectSnapshots: on the capture of an active Proxmox VE thin
// snapshot holding the guest's PV (e2e/health/lockd.sh), the snapshot is
// a VM disk, seed 000's reject lets it through every one of its names
// (as LVM did in the guest), and keel's reject hides it; on every capture
// with VM disks, keel's reject hides what seed 000's hides.
func TestVMDiskRejectSnapshots(t *testing.T) {
	seed, err := lvmregex.NewFilter([]string{legacyVMDiskReject})
	if err != nil {
		t.Fatal(err)
	}
	keel, err := lvmregex.NewFilter([]string{vmDiskReject})
	if err != nil {
		t.Fatal(err)
	}
	h := replayHost(t, "filter-thinsnap")
	p := newPlanner(h)
	snap := h.LVs["pvethin/snap_vm-100-disk-0_snap1"]
	if snap == nil || !snap.Active || !slices.Contains(p.vmDiskLVs(), snap) {
		t.Fatalf("capture: pvethin/snap_vm-100-disk-0_snap1 not an active VM disk: %+v", snap)
	}
	if !seed.Decide(p.lvAliases(snap)).Accepted || keel.Decide(p.lvAliases(snap)).Accepted {
		t.Errorf("snapshot aliases %q: seed 000's reject accepts %v, keel's %v; want true, false",
			p.lvAliases(snap), seed.Decide(p.lvAliases(snap)).Accepted, keel.Decide(p.lvAliases(snap)).Accepted)
	}
	for _, name := range []string{"filter-thinsnap", "vdo-thick", "pve"} {
		h := replayHost(t, name)
		p := newPlanner(h)
		for _, lv := range p.vmDiskLVs() {
			if !seed.Decide(p.lvAliases(lv)).Accepted && keel.Decide(p.lvAliases(lv)).Accepted {
				t.Errorf("%s: %s hidden by seed 000's reject, not by keel's", name, lv.FullName)
			}
		}
	}
}

// TestDeclaredFilterLeak: a declared filter whose accept matches a VM disk by
// another of its names is reported against the desired state, on the
// vdo-thick capture (vdovg/vm-100-disk-0 is /dev/dm-3 there).
// isVMDiskName is the regex ^(snap_)?(vm|base)-[0-9]+- written out: the
// same answer on Proxmox's names, near misses and pieces of them.
func TestIsVMDiskName(t *testing.T) {
	re := regexp.MustCompile(`^(snap_)?(vm|base)-[0-9]+-`)
	names := []string{"vm-100-disk-0", "base-101-disk-1", "vm-100-cloudinit", "vm-100-state-snap1",
		"snap_vm-100-disk-0_nightly", "snap_base-9-disk-0_x", "snap_snap_vm-1-disk-0", "vm-100", "vm--disk",
		"vm-x-disk-0", "VM-100-disk-0", "base100-disk", "snap_", "vm-", "vm-1-", "vm-1", "svm-1-disk", "data", "",
		"vm-0123456789-", "basevm-1-", "snap_vm-1"}
	for _, n := range names {
		for i := 0; i <= len(n); i++ {
			if got, want := isVMDiskName(n[:i]), re.MatchString(n[:i]); got != want {
				t.Errorf("isVMDiskName(%q) = %v, the regex says %v", n[:i], got, want)
			}
		}
	}
}

func TestDeclaredFilterLeak(t *testing.T) {
	h := replayHost(t, "vdo-thick")
	for _, c := range []struct {
		filter string
		leak   string // "" when the filter hides the disk
	}{
		{`reject: ["/dev/mapper/.*-(vm|base)--[0-9]+--disk--[0-9]+"]`, ""},
		{`reject: ["/dev/mapper/.*-(vm|base)--[0-9]+--disk--[0-9]+"], accept: ["^/dev/dm-"]`, "a|^/dev/dm-| accepts it as /dev/dm-3"},
		// The host's own reject of VM disks stays unless dropped.
		{`reject: ["/dev/zd.*"]`, ""},
		{`reject: ["/dev/zd.*"], drop: ["/dev/mapper/.*-(vm|base)--[0-9]+--disk--[0-9]+"]`, "no entry matches any of its names"},
	} {
		src := "lvm: {scanLVs: true, globalFilter: {" + c.filter + "}}\n"
		d, err := schema.NewLoader().LoadFiles([]schema.File{{Name: "f.cue", Data: []byte(src)}})
		if err != nil {
			t.Fatal(err)
		}
		var msg string
		for _, f := range Plan(d.Config, h).Findings {
			if f.Key() == "lvm.global_filter@desired:lvm.globalFilter" {
				msg = f.Message
			}
		}
		if c.leak == "" && msg != "" || c.leak != "" && !strings.Contains(msg, "vdovg/vm-100-disk-0 ("+c.leak+")") {
			t.Errorf("%s: finding %q, want one naming %q", c.filter, msg, c.leak)
		}
	}
}

// TestDecideDisksInOrder: on the captured 2,000-LV host, the filter's
// verdicts judged in chunks on all CPUs are the ones judged one disk after
// another, in the disks' order, with all three verdicts mixed: a reject for
// a tenth of the disks by their mapper name, an accept for half of the rest
// by their /dev/VG/LV name, and no entry matching the others.
func TestDecideDisksInOrder(t *testing.T) {
	_, h := replayScale(t, "scale-vdo")
	p := newPlanner(h)
	disks := p.vmDiskLVs()
	if len(disks) <= 4*decideDisksChunk {
		t.Fatalf("%d VM disks: the capture should give several chunks", len(disks))
	}
	f, err := lvmregex.NewFilter([]string{`r|/dev/mapper/vdovg-vm--1[0-9]*5--disk--0|`, `a|/dev/vdovg/vm-1[0-9]*[02468]-|`})
	if err != nil {
		t.Fatal(err)
	}
	got := p.decideDisks(f, disks)
	var accepted, rejected, unmatched int
	for i, lv := range disks {
		want := f.Decide(p.lvAliases(lv))
		if got[i] != want {
			t.Fatalf("disk %d %s: %+v, want %+v", i, lv.FullName, got[i], want)
		}
		switch {
		case !want.Accepted:
			rejected++
		case want.Alias == "":
			unmatched++
		default:
			accepted++
		}
	}
	if accepted == 0 || rejected == 0 || unmatched == 0 {
		t.Fatalf("accepted %d, rejected %d, unmatched %d: the filter should split the disks three ways", accepted, rejected, unmatched)
	}
}

// planLVM plans the lvm block src against the capture of e2e/lvmfilter's
// hidepv.sh: Proxmox VE's stock global_filter (pve-manager's postinst: zd,
// rbd and nbd rejected) and VG datavg on the virtio disk virtio-data1.
func planLVM(t *testing.T, src string) Result {
	t.Helper()
	d, err := schema.NewLoader().LoadFiles([]schema.File{{Name: "f.cue", Data: []byte(src)}})
	if err != nil {
		t.Fatal(err)
	}
	return Plan(d.Config, replayHost(t, "hidepv-pve-stock"))
}

// TestFilterHidesPV: a declared filter that would hide datavg's PV is
// refused with an error finding naming the PV, its VG and the entry, and
// no lvm.conf action at all (the guest showed vgs losing datavg under it);
// one with an accept for the PV's by-id name is written.
func TestFilterHidesPV(t *testing.T) {
	r := planLVM(t, `lvm: {scanLVs: false, globalFilter: accept: ["/dev/disk/by-id/ata-.*"]}`+"\n")
	var f *Finding
	for i := range r.Findings {
		if r.Findings[i].ID == LVMFilterHidesPV {
			f = &r.Findings[i]
		}
	}
	if f == nil || f.Severity != Error {
		t.Fatalf("no error lvm.filter_hides_pv: %v", keys(r.Findings))
	}
	for _, want := range []string{"PV /dev/vda of VG datavg", "r|.*| rejects it as /dev/vda", "/dev/disk/by-id/virtio-data1"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("message lacks %q: %s", want, f.Message)
		}
	}
	if !strings.Contains(f.Remedy, `"^/dev/disk/by-id/virtio-data1$"`) {
		t.Errorf("remedy does not name the PV: %s", f.Remedy)
	}
	for _, a := range r.Actions {
		if a.Kind == KindLVMConf {
			t.Errorf("lvm.conf action despite the refusal: %+v", a.LVMConf)
		}
	}

	// The remedy's accept, declared as printed, is written.
	_, accept, _ := strings.Cut(f.Remedy, `e.g. `)
	accept, _, _ = strings.Cut(accept, ",")
	r = planLVM(t, `lvm: globalFilter: accept: [`+accept+`, "/dev/disk/by-id/ata-.*"]`+"\n")
	if slices.ContainsFunc(r.Findings, func(f Finding) bool { return f.ID == LVMFilterHidesPV }) {
		t.Errorf("the remedy's accept %s is refused: %v", accept, keys(r.Findings))
	}
	if !slices.ContainsFunc(r.Actions, func(a Action) bool { return a.Kind == KindLVMConf }) {
		t.Errorf("no lvm.conf action for a filter that hides no PV")
	}
}

// TestFilterKeepsPlatformRejects: a declared reject list keeps Proxmox VE's
// stock rejects, after the declared one; drop removes one and the finding
// says so; and the filter written is planned as converged on the next pass.
func TestFilterKeepsPlatformRejects(t *testing.T) {
	vm := "/dev/mapper/.*-(vm|base)--[0-9]+--disk--[0-9]+"
	for _, c := range []struct {
		drop    string
		want    []string
		message string
	}{
		{"", []string{"r|" + vm + "|", "r|/dev/zd.*|", "r|/dev/rbd.*|", "r|/dev/nbd.*|"},
			`the host's rejects ["r|/dev/zd.*|","r|/dev/rbd.*|","r|/dev/nbd.*|"] stay`},
		{`, drop: ["/dev/nbd.*"]`, []string{"r|" + vm + "|", "r|/dev/zd.*|", "r|/dev/rbd.*|"},
			`the write removes ["r|/dev/nbd.*|"] from the host's filter`},
	} {
		r := planLVM(t, "lvm: globalFilter: {reject: [\""+vm+"\"]"+c.drop+"}\n")
		var got []string
		for _, a := range r.Actions {
			if a.Kind == KindLVMConf && a.LVMConf != nil {
				got = a.LVMConf.GlobalFilter
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("drop %q: writes %q, want %q", c.drop, got, c.want)
		}
		var msg string
		for _, f := range r.Findings {
			if f.Key() == "lvm.global_filter@lvm.conf" {
				msg = f.Message
			}
		}
		if !strings.Contains(msg, c.message) {
			t.Errorf("drop %q: finding %q, want it to say %q", c.drop, msg, c.message)
		}
		if !slices.ContainsFunc(r.Findings, func(f Finding) bool { return f.ID == LVMInitramfsStale }) {
			t.Errorf("drop %q: no lvm.initramfs_stale with the filter write", c.drop)
		}
		// The next pass, on the filter written.
		gf := &spec.GlobalFilter{Reject: []string{vm}}
		if c.drop != "" {
			gf.Drop = []string{"/dev/nbd.*"}
		}
		if again, _, dropped := mergeFilter(gf, got); !slices.Equal(again, got) || len(dropped) > 0 {
			t.Errorf("drop %q: on its own filter keel would write %q (dropping %q)", c.drop, again, dropped)
		}
	}
}

// TestScanLVsWithoutFilter: scanLVs true with no declared filter is
// reported outside --audit too when the host's filter lets VM disks
// through (Proxmox VE's stock filter does), on the desired state.
func TestScanLVsWithoutFilter(t *testing.T) {
	r := planLVM(t, "lvm: scanLVs: true\n")
	if !slices.Contains(keys(r.Findings), "lvm.global_filter@desired:lvm.scanLVs") {
		t.Errorf("findings %v, want lvm.global_filter@desired:lvm.scanLVs", keys(r.Findings))
	}
	r = planLVM(t, "lvm: {scanLVs: true, globalFilter: reject: [\"/dev/mapper/.*-(vm|base)--[0-9]+--disk--[0-9]+\"]}\n")
	if slices.Contains(keys(r.Findings), "lvm.global_filter@desired:lvm.scanLVs") {
		t.Errorf("reported with a declared filter: %v", keys(r.Findings))
	}
}
