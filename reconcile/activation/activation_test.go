package activation

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/schema/spec"
)

// The node snapshot of the VDO-on-bcache scenario, captured in the test
// guest: vdosplit on /dev/bcache0 (backing sda) and the NVMe, the VDO LV
// vdosplit/vdolv, and vdovg stacked on it.
const bcacheNode = "../../examples/nodes/vdo-on-bcache.txtar"

func probeNode(t testing.TB, name string) (*model.Host, hostio.Source) {
	t.Helper()
	s, err := hostio.ReadSnapshotFile(name)
	if err != nil {
		t.Fatal(err)
	}
	src := hostio.Replay(s)
	h, err := probes.Probe(context.Background(), src)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return h, src
}

func i64(v int64) *int64 { return &v }

// stack declares what the snapshot holds, in the example's shape.
func stack() *spec.Config {
	return &spec.Config{
		Bcache: map[string]spec.Bcache{"bcache0": {
			Backing: "/dev/sda", CacheMode: "writeback", SequentialCutoff: i64(0), WritebackPercent: i64(40),
			WritebackRate: i64(81920), WritebackRateMinimum: i64(20480),
			CongestedReadThresholdUs: i64(0), CongestedWriteThresholdUs: i64(0),
		}},
		VolumeGroups: map[string]spec.VolumeGroup{
			"vdosplit": {PVs: []string{"/dev/bcache0", "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0"},
				VDOPools: map[string]spec.VDOPool{"pool": {LV: "vdolv"}}},
			"vdovg": {PVs: []string{"/dev/vdosplit/vdolv"}},
		},
	}
}

func TestOrderStacksBottomUp(t *testing.T) {
	cfg := stack()
	cfg.VolumeGroups["top"] = spec.VolumeGroup{PVs: []string{"/dev/mapper/vdovg-data"}}
	cfg.VolumeGroups["alone"] = spec.VolumeGroup{PVs: []string{"/dev/sdz"}}
	got, err := Order(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range got {
		names = append(names, l.VG)
	}
	if want := []string{"alone", "vdosplit", "vdovg", "top"}; !slices.Equal(names, want) {
		t.Errorf("order %v, want %v", names, want)
	}
	if got[2].Depth != 1 || !slices.Equal(got[2].Lowers, []string{"vdosplit/vdolv"}) || got[3].Depth != 2 {
		t.Errorf("layers %+v", got)
	}
}

func TestOrderRefusesCycle(t *testing.T) {
	cfg := &spec.Config{VolumeGroups: map[string]spec.VolumeGroup{
		"a": {PVs: []string{"/dev/b/lv"}}, "b": {PVs: []string{"/dev/a/lv"}}}}
	if _, err := Order(cfg); err == nil || !strings.Contains(err.Error(), "stacking cycle") {
		t.Errorf("err = %v", err)
	}
}

func TestLVPathMapperName(t *testing.T) {
	cfg := &spec.Config{VolumeGroups: map[string]spec.VolumeGroup{"vdo-lab": {}}}
	if lv, ok := lvPath(cfg, "/dev/mapper/vdo--lab-my--lv"); !ok || lv != "vdo-lab/my-lv" {
		t.Errorf("got %q %v", lv, ok)
	}
	if _, ok := lvPath(cfg, "/dev/disk/by-id/nvme-x"); ok {
		t.Error("by-id path taken for an LV")
	}
	if _, ok := lvPath(cfg, "/dev/other/lv"); ok {
		t.Error("LV of an undeclared VG taken for a declared one")
	}
}

func TestComputeConvergedSnapshot(t *testing.T) {
	h, _ := probeNode(t, bcacheNode)
	p, err := Compute(stack(), h)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Done() || len(p.Steps) != 2 || p.Steps[0].VG != "vdosplit" || p.Steps[1].VG != "vdovg" {
		t.Errorf("plan %+v", p)
	}
	if b := p.Blocked(); len(b) != 0 {
		t.Errorf("blocked: %q", b)
	}
}

// After a boot where lvm2 skipped the PV on the VDO LV: the upper VG's LV is
// inactive. keel autoactivates it, and only it.
func TestComputeUpperInactive(t *testing.T) {
	h, _ := probeNode(t, bcacheNode)
	h.LVs["vdovg/vm-100-disk-0"].Active = false
	p, _ := Compute(stack(), h)
	run := p.Runnable()
	if p.Done() || len(run) != 1 || run[0].VG != "vdovg" {
		t.Fatalf("runnable %+v", run)
	}
	if want := [][]string{{"vgchange", "-aay", "vdovg"}}; !slices.EqualFunc(run[0].Commands, want, slices.Equal) {
		t.Errorf("commands %q", run[0].Commands)
	}
	// An LV with autoactivation off (a Proxmox guest disk) is left alone.
	h.LVs["vdovg/vm-100-disk-0"].Fields.Set("lv_autoactivation", "")
	if p, _ := Compute(stack(), h); !p.Done() {
		t.Errorf("guest disk without autoactivation blocks: %+v", p)
	}
}

// Both VGs of the stack need a vgchange: the lower one has an inactive LV
// besides the VDO LV the upper one sits on. Only the lower VG is runnable
// now; the upper one waits for the lower to be active, though its PV is
// there: the activation probes and plans again after each step it runs,
// so the stack comes up bottom-up (reconcile/converge activationActions).
func TestRunnableWaitsForLowerVG(t *testing.T) {
	h, _ := probeNode(t, bcacheNode)
	h.LVs["vdovg/vm-100-disk-0"].Active = false
	other := *h.LVs["vdosplit/vdolv"]
	other.Name, other.FullName, other.Active = "other", "vdosplit/other", false
	h.LVs[other.FullName] = &other
	p, _ := Compute(stack(), h)
	if len(p.Steps) != 2 || p.Steps[0].Status != Activate || p.Steps[1].Status != Activate {
		t.Fatalf("want both steps to activate: %+v", p.Steps)
	}
	if run := p.Runnable(); len(run) != 1 || run[0].VG != "vdosplit" {
		t.Errorf("runnable %+v, want vdosplit alone", run)
	}
	p.Steps[0].Status = Active
	if run := p.Runnable(); len(run) != 1 || run[0].VG != "vdovg" {
		t.Errorf("lower active: runnable %+v, want vdovg", run)
	}
}

// LVM has not read the label on the VDO LV: pvscan it, then activate.
func TestComputeUpperNotScanned(t *testing.T) {
	h, _ := probeNode(t, bcacheNode)
	delete(h.PVs, "/dev/vdosplit/vdolv")
	delete(h.VGs, "vdovg")
	for k, lv := range h.LVs {
		if lv.VG == "vdovg" {
			delete(h.LVs, k)
		}
	}
	p, _ := Compute(stack(), h)
	run := p.Runnable()
	want := [][]string{{"pvscan", "--cache", "/dev/vdosplit/vdolv"}, {"vgchange", "-aay", "vdovg"}}
	if len(run) != 1 || !slices.EqualFunc(run[0].Commands, want, slices.Equal) {
		t.Errorf("runnable %+v", run)
	}
}

// The slow disk behind bcache0 is gone: nothing is runnable, and the
// reasons name the missing PV at each level.
func TestComputeSlowDiskMissing(t *testing.T) {
	h, _ := probeNode(t, bcacheNode)
	// bcache0 not registered: no PV, no /sys/block/bcache0, no by-id link.
	delete(h.PVs, "/dev/bcache0")
	delete(h.Queues, "bcache0")
	delete(h.ByID, "bcache0")
	h.VGs["vdosplit"].Attr = "wz-pn-"
	for _, lv := range h.LVs {
		lv.Active = false
	}
	p, _ := Compute(stack(), h)
	if p.Done() || len(p.Runnable()) != 0 {
		t.Fatalf("plan %+v", p)
	}
	b := p.Blocked()
	if len(b) != 2 {
		t.Fatalf("blocked %q", b)
	}
	if want := "vdosplit incomplete: PV /dev/bcache0 is missing: bcache device bcache0 (backing /dev/sda) is not registered"; b[0] != want {
		t.Errorf("lower:\n got %s\nwant %s", b[0], want)
	}
	if want := "vdovg incomplete: PV /dev/vdosplit/vdolv is not active because vdosplit incomplete: PV /dev/bcache0"; !strings.HasPrefix(b[1], want) {
		t.Errorf("upper:\n got %s\nwant %s…", b[1], want)
	}
}

// A declared VG that does not exist, on devices that are all present, is
// Absent: it does not hold the stack (nor the guests that require
// keel-activate) back, since no wait makes it appear. The stack above it is
// Absent too. A VG whose disk is not there yet still waits.
func TestComputeVGNotCreated(t *testing.T) {
	h, _ := probeNode(t, bcacheNode)
	cfg := stack()
	// sdb (ssd2): present in the capture, no PV label (bcache0's cache
	// device); the NVMe: a PV of vdosplit.
	cfg.VolumeGroups["newvg"] = spec.VolumeGroup{Create: true, PVs: []string{"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_ssd2", "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0"}}
	cfg.VolumeGroups["upvg"] = spec.VolumeGroup{PVs: []string{"/dev/newvg/nlv"}}
	p, _ := Compute(cfg, h)
	if !p.Done() || len(p.Blocked()) != 0 {
		t.Fatalf("done %v, blocked %q", p.Done(), p.Blocked())
	}
	want := []string{
		"vg newvg does not exist and nothing it could be on is still to come (/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_ssd2 (no PV label), " +
			"/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0 (a PV of VG vdosplit)): keel.service creates it (create: true)",
		"vg upvg does not exist and nothing it could be on is still to come (PV /dev/newvg/nlv: LV newvg/nlv does not exist (" +
			"vg newvg does not exist",
	}
	got := p.Absent()
	if len(got) != 2 || got[0] != want[0] || !strings.HasPrefix(got[1], want[1]) ||
		!strings.HasSuffix(got[1], "keel does not create it (create: false); keel check reports it as vg.missing") {
		t.Errorf("absent:\n got %q\nwant %q", got, want)
	}

	// A disk still to come, and a device the kernel shows with size 0 (an
	// md array not yet assembled looks so; here loop0, which has no file):
	// both are waited for.
	cfg.VolumeGroups["newvg"] = spec.VolumeGroup{Create: true, PVs: []string{"/dev/loop0", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd9"}}
	if q := h.Queues["loop0"]; q == nil || q.Size != 0 {
		t.Fatalf("loop0 in the capture: %+v", q)
	}
	p, _ = Compute(cfg, h)
	b := p.Blocked()
	if p.Done() || len(b) != 2 || b[0] != "vg newvg not found: PV /dev/loop0 is missing: device loop0 has size 0 (not assembled or attached yet); "+
		"PV /dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd9 is missing: no such device" ||
		!strings.HasPrefix(b[1], "vg upvg not found: PV /dev/newvg/nlv is not active because vg newvg not found") {
		t.Errorf("devices still to come: blocked %q", b)
	}
}

// The first start of keel.service in e2e/underfire, captured just before it
// (keel snapshot in the guest): fvg is declared with create: true on the
// device-mapper device flt, present and blank. Activation has nothing to
// wait for: fvg is Absent and the plan is done at once; waiting for it
// would use the whole timeout and fail keel-activate.service.
func TestComputeFirstStart(t *testing.T) {
	h, _ := probeNode(t, "../plan/testdata/snapshots/underfire-first-start.txtar")
	if _, ok := h.VGs["fvg"]; ok {
		t.Fatal("the capture holds fvg already")
	}
	if h.Device("/dev/mapper/flt") == "" {
		t.Fatalf("flt not found among the devices of the capture")
	}
	cfg := &spec.Config{VolumeGroups: map[string]spec.VolumeGroup{
		"fvg": {PVs: []string{"/dev/mapper/flt"}, Create: true},
	}}
	p, err := Compute(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	want := "vg fvg does not exist and nothing it could be on is still to come (/dev/mapper/flt (no PV label)): keel.service creates it (create: true)"
	if !p.Done() || len(p.Steps) != 1 || p.Steps[0].Status != Absent || p.Steps[0].Reason != want {
		t.Errorf("plan %+v\nwant one absent step: %s", p, want)
	}
	// The same VG on a disk this host does not have waits, as before.
	cfg.VolumeGroups["fvg"] = spec.VolumeGroup{PVs: []string{"/dev/mapper/nothere"}, Create: true}
	if p, _ := Compute(cfg, h); p.Done() || len(p.Blocked()) != 1 {
		t.Errorf("a PV still to come: done %v, blocked %q", p.Done(), p.Blocked())
	}
}

// The generated DM_UUID must be the one udev sees: the snapshot's
// /dev/disk/by-id/dm-uuid-… link (made by udev from DM_UUID) points at the
// VDO LV's dm device.
func TestPVScanRuleMatchesRealDMUUID(t *testing.T) {
	h, src := probeNode(t, bcacheNode)
	files, err := Rules(stack(), h, nil)
	if err != nil {
		t.Fatal(err)
	}
	pv := files[0]
	if pv.Path != PVScanRule {
		t.Fatalf("path %s", pv.Path)
	}
	var rules []string
	for _, l := range strings.Split(pv.Content, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			rules = append(rules, l)
		}
	}
	if len(rules) != 1 || !strings.HasSuffix(rules[0], `ENV{LVM_PVSCAN_ON_LVS}="1"`) {
		t.Fatalf("rules %q", rules)
	}
	_, after, _ := strings.Cut(rules[0], `ENV{DM_UUID}=="`)
	uuid, _, _ := strings.Cut(after, `"`)
	target, err := src.FS.Readlink("/dev/disk/by-id/dm-uuid-" + uuid)
	if err != nil {
		t.Fatalf("udev made no link for %s: %v", uuid, err)
	}
	if q := h.Queues[path.Base(target)]; q == nil || q.DMName != "vdosplit-vdolv" {
		t.Errorf("dm-uuid %s is %s (%+v), not the VDO LV", uuid, target, q)
	}
	// The guest disk's LV is not matched by anything.
	guest := h.LVs["vdovg/vm-100-disk-0"]
	if strings.Contains(pv.Content, guest.DMName) || strings.Contains(pv.Content, strings.ReplaceAll(guest.UUID, "-", "")) {
		t.Errorf("guest LV matched:\n%s", pv.Content)
	}
}

func TestPVScanRuleByNameBeforeCreation(t *testing.T) {
	cfg := stack()
	files, err := Rules(cfg, &model.Host{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(files[0].Content, `ENV{DM_NAME}=="vdosplit-vdolv", ENV{LVM_PVSCAN_ON_LVS}="1"`) {
		t.Errorf("content:\n%s", files[0].Content)
	}
	if len(files[1].Notes) != 1 || !strings.Contains(files[1].Notes[0], "not registered") {
		t.Errorf("bcache notes %q", files[1].Notes)
	}
}

// BcacheRuleComplete is false for a rule that could not resolve a declared
// device (the fast path then leaves the rule to the full pass) and true for
// one that resolved them all.
func TestBcacheRuleComplete(t *testing.T) {
	files, err := Rules(stack(), &model.Host{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if BcacheRuleComplete(files[1].Content) {
		t.Errorf("a rule with an unregistered backing device is complete:\n%s", files[1].Content)
	}
	h, _ := probeNode(t, bcacheNode)
	files, _ = Rules(stack(), h, nil)
	if len(files[1].Notes) != 0 || !BcacheRuleComplete(files[1].Content) {
		t.Errorf("a rule of a registered device is not complete (notes %q):\n%s", files[1].Notes, files[1].Content)
	}
}

func TestBcacheRuleFromSnapshot(t *testing.T) {
	h, _ := probeNode(t, bcacheNode)
	files, _ := Rules(stack(), h, nil)
	b := files[1]
	var uuid string
	for u, dev := range h.Bcache {
		if dev.Backing == "sda" {
			uuid = u
		}
	}
	want := `SUBSYSTEM=="block", ACTION=="change", DRIVER=="bcache", KERNEL=="bcache[0-9]*", ENV{CACHED_UUID}=="` + uuid + `", ` +
		`ATTR{bcache/cache_mode}="writeback", ATTR{bcache/sequential_cutoff}="0", ATTR{bcache/writeback_percent}="40", ` +
		`ATTR{bcache/writeback_rate_minimum}="20480", ATTR{bcache/writeback_rate}="81920", ` +
		`ATTR{bcache/cache/congested_read_threshold_us}="0", ATTR{bcache/cache/congested_write_threshold_us}="0"`
	if uuid == "" || !strings.Contains(b.Content, want+"\n") || len(b.Notes) != 0 {
		t.Errorf("bcache rule:\n%s\nwant line:\n%s", b.Content, want)
	}
	// A by-id backing resolves through the resolver.
	cfg := stack()
	bc := cfg.Bcache["bcache0"]
	bc.Backing = "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd1"
	cfg.Bcache["bcache0"] = bc
	files, _ = Rules(cfg, h, func(p string) string {
		if p == bc.Backing {
			return "sda"
		}
		return ""
	})
	if !strings.Contains(files[1].Content, uuid) {
		t.Errorf("by-id backing not resolved:\n%s", files[1].Content)
	}
}

// A declared device keel cannot resolve in this pass (unregistered, LVM's
// report failed, EIO) keeps the line the installed rule has for it, so the
// rule is not rewritten, nor udev reloaded, each time a read fails; a line
// installed for another backing is not taken.
func TestBcacheRuleKeepsInstalledLine(t *testing.T) {
	h, _ := probeNode(t, bcacheNode)
	good, _ := Rules(stack(), h, nil)
	gone := &model.Host{KeelFiles: map[string]*model.KeelFile{
		BcacheRule: {Path: BcacheRule, Content: good[1].Content},
	}}
	files, _ := Rules(stack(), gone, nil)
	if files[1].Content != good[1].Content || len(files[1].Notes) != 0 {
		t.Errorf("unresolved device dropped its installed line (notes %q):\n%s\nwant:\n%s", files[1].Notes, files[1].Content, good[1].Content)
	}
	other := stack()
	bc := other.Bcache["bcache0"]
	bc.Backing = "/dev/sdz"
	other.Bcache["bcache0"] = bc
	files, _ = Rules(other, gone, nil)
	if BcacheRuleComplete(files[1].Content) {
		t.Errorf("a line installed for another backing was taken:\n%s", files[1].Content)
	}
	gone.KeelFiles[BcacheRule].Unknown = "not recorded"
	files, _ = Rules(stack(), gone, nil)
	if BcacheRuleComplete(files[1].Content) {
		t.Errorf("a rule whose content is unknown was read:\n%s", files[1].Content)
	}
}

func TestCompare(t *testing.T) {
	h, _ := probeNode(t, bcacheNode)
	files, _ := Rules(stack(), h, nil)
	installed := map[string]string{PVScanRule: files[0].Content, BcacheRule: files[1].Content + "# edited\n"}
	read := func(p string) ([]byte, error) {
		if c, ok := installed[p]; ok {
			return []byte(c), nil
		}
		return nil, fs.ErrNotExist
	}
	d := Compare(files, read)
	if len(d) != 1 || d[0].File.Path != BcacheRule || d[0].Missing {
		t.Fatalf("drift %+v", d)
	}
	delete(installed, PVScanRule)
	d = Compare(files, read)
	if len(d) != 2 || d[0].File.Path != PVScanRule || !d[0].Missing || !strings.Contains(d[0].Message(), "not installed") {
		t.Errorf("drift %+v", d)
	}
	// Nothing declared and nothing installed is not drift.
	empty, _ := Rules(&spec.Config{}, h, nil)
	if d := Compare(empty, func(string) ([]byte, error) { return nil, errors.New("absent") }); len(d) != 0 {
		t.Errorf("empty desired state drifts: %+v", d)
	}
}

// The node captured in the test guest (e2e/boot activate.sh) right after
// lvm2's own autoactivation (vgchange -aay) of three VGs, each holding
// what lvm2 leaves inactive: pve, a thin pool with a Proxmox VE thin
// snapshot (activation-skip set by lvm2) and a template (lvchange -ky);
// offvg, with VG autoactivation off; listvg, whose LV "out" is not in
// activation/auto_activation_volume_list ["pve","offvg","listvg/in"].
const autoactivationNode = "testdata/autoactivation.txtar"

func autoactivationStack() *spec.Config {
	disk := func(s string) []string { return []string{"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_" + s} }
	return &spec.Config{VolumeGroups: map[string]spec.VolumeGroup{
		"pve": {PVs: disk("hdd1")}, "offvg": {PVs: disk("hdd2")}, "listvg": {PVs: disk("hdd3")},
	}}
}

// inactiveOf returns the "vg: inactive LVs" reasons of the plan's Activate
// steps.
func inactiveOf(p Plan) []string {
	var out []string
	for _, s := range p.Steps {
		if s.Status == Activate {
			out = append(out, s.Reason)
		}
	}
	return out
}

// What lvm2 left inactive does not hold keel activate: the stack is done
// as captured. Each of lvm2's rules is needed: with any one of them
// undone in the model, keel would wait for that LV and run vgchange -aay,
// which leaves it inactive again (the bug: it then failed at its bound).
func TestComputeFollowsLVM2Autoactivation(t *testing.T) {
	h, _ := probeNode(t, autoactivationNode)
	p, err := Compute(autoactivationStack(), h)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Done() {
		t.Fatalf("not done: %q", p.Blocked())
	}
	for _, lv := range []string{"pve/snap_vm-100-disk-0_before", "pve/base-101-disk-0", "offvg/lv0", "listvg/out"} {
		if o := h.LVs[lv]; o == nil || o.Active {
			t.Fatalf("capture: %s %+v, want it inactive", lv, o)
		}
	}
	if !h.VGs["offvg"].NoAutoactivation || h.VGs["pve"].NoAutoactivation {
		t.Fatalf("vg_autoactivation: offvg %v, pve %v", h.VGs["offvg"].NoAutoactivation, h.VGs["pve"].NoAutoactivation)
	}
	undo := map[string]struct {
		change func(h *model.Host)
		want   string
	}{
		// lv_activation_skip (lvm2 lib/metadata/lv_manip.c): lv_attr 'k'.
		"thin snapshot activation-skip": {func(h *model.Host) {
			lv := h.LVs["pve/snap_vm-100-disk-0_before"]
			lv.Attr = lv.Attr[:9] + "-"
		}, "vg pve: inactive LVs pve/snap_vm-100-disk-0_before"},
		"template lvchange -ky": {func(h *model.Host) {
			lv := h.LVs["pve/base-101-disk-0"]
			lv.Attr = lv.Attr[:9] + "-"
		}, "vg pve: inactive LVs pve/base-101-disk-0"},
		// vgchange_activate (tools/vgchange.c): VG NOAUTOACTIVATE.
		"vg autoactivation": {func(h *model.Host) { h.VGs["offvg"].NoAutoactivation = false },
			"vg offvg: inactive LVs offvg/lv0"},
		// lv_passes_auto_activation_filter (lib/activate/activate.c).
		"volume list unset": {func(h *model.Host) { delete(h.LVMConfig.Values, "activation/auto_activation_volume_list") },
			"vg listvg: inactive LVs listvg/out"},
		"volume list names the VG": {func(h *model.Host) {
			h.LVMConfig.Values["activation/auto_activation_volume_list"] = `["pve","offvg","listvg"]`
		}, "vg listvg: inactive LVs listvg/out"},
		"volume list by the LV's tag": {func(h *model.Host) {
			h.LVMConfig.Values["activation/auto_activation_volume_list"] = `["pve","offvg","listvg/in","@keep"]`
			h.LVs["listvg/out"].Fields.Set("lv_tags", "keep")
		}, "vg listvg: inactive LVs listvg/out"},
		"volume list by the VG's tag": {func(h *model.Host) {
			h.LVMConfig.Values["activation/auto_activation_volume_list"] = `["pve","offvg","@keep"]`
			h.VGs["listvg"].Tags = []string{"keep"}
		}, "vg listvg: inactive LVs listvg/out"},
	}
	for name, u := range undo {
		h, _ := probeNode(t, autoactivationNode)
		u.change(h)
		p, _ := Compute(autoactivationStack(), h)
		if got := inactiveOf(p); !slices.Equal(got, []string{u.want}) {
			t.Errorf("%s: activate %q, want %q", name, got, u.want)
		}
	}
	// Lists that leave every LV out: an empty one, a tag nothing has, "@*"
	// with no tag anywhere.
	for _, list := range []string{`[]`, `["@other"]`, `["@*"]`} {
		h, _ := probeNode(t, autoactivationNode)
		for _, lv := range h.LVs {
			if lv.VG == "listvg" || lv.VG == "pve" {
				lv.Active = false
			}
		}
		h.LVMConfig.Values["activation/auto_activation_volume_list"] = list
		if p, _ := Compute(autoactivationStack(), h); !p.Done() {
			t.Errorf("list %s: waits for %q", list, p.Blocked())
		}
	}
	// With the list unset, listvg/out is left out by its own
	// lv_autoactivation off (lvcreate --setautoactivation n).
	h, _ = probeNode(t, autoactivationNode)
	delete(h.LVMConfig.Values, "activation/auto_activation_volume_list")
	h.LVs["listvg/out"].Fields.Set("lv_autoactivation", "")
	if p, _ := Compute(autoactivationStack(), h); !p.Done() {
		t.Errorf("lv_autoactivation off still waited for: %q", p.Blocked())
	}
}

// dropDMDevice replays a node with one device-mapper device gone from
// `dmsetup table`, as if its LV had not been activated.
type dropDMDevice struct {
	hostio.Runner
	name string
}

func (d dropDMDevice) Run(ctx context.Context, c hostio.Cmd) (hostio.Result, error) {
	res, err := d.Runner.Run(ctx, c)
	if c.Name != "dmsetup" || !slices.Equal(c.Args, []string{"table"}) || err != nil {
		return res, err
	}
	var kept []string
	for _, line := range strings.SplitAfter(string(res.Stdout), "\n") {
		if !strings.HasPrefix(line, d.name+": ") {
			kept = append(kept, line)
		}
	}
	res.Stdout = []byte(strings.Join(kept, ""))
	return res, nil
}

// The model keel activate builds from its report read during lvm2's own
// activation and from device-mapper after it (probes.ProbeActivation)
// gives the plan the probe pass gives, on the node captured in the guest
// after lvm2's vgchange -aay: every LV, PV and VG of the pass, each LV
// active exactly when the pass reads it active, every declared VG active.
// With one LV's device missing from device-mapper, its VG is not.
func TestComputeOnActivationProbe(t *testing.T) {
	full, src := probeNode(t, autoactivationNode)
	quick := func(drop string) *model.Host {
		t.Helper()
		s := src
		if drop != "" {
			s.Runner = dropDMDevice{Runner: src.Runner, name: drop}
		}
		r, err := probes.ReadActivationReport(context.Background(), s, nil)
		if err != nil {
			t.Fatal(err)
		}
		h, err := probes.ProbeActivation(context.Background(), s, r)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	h := quick("")
	if len(h.LVs) != len(full.LVs) || len(h.VGs) != len(full.VGs) || len(h.PVs) != len(full.PVs) {
		t.Errorf("activation probe: %d LVs, %d VGs, %d PVs; the pass: %d, %d, %d",
			len(h.LVs), len(h.VGs), len(h.PVs), len(full.LVs), len(full.VGs), len(full.PVs))
	}
	active := 0
	for key, lv := range full.LVs {
		q := h.LVs[key]
		switch {
		case q == nil:
			t.Errorf("activation probe: no LV %s", key)
		case q.Active != lv.Active:
			t.Errorf("activation probe: %s active %v, the pass reads %v", key, q.Active, lv.Active)
		case lv.Active:
			active++
		}
	}
	if active == 0 || active == len(full.LVs) {
		t.Fatalf("capture: %d of %d LVs active, want some of each", active, len(full.LVs))
	}
	for name, pv := range full.PVs {
		if q := h.PVs[name]; q == nil || q.Device != pv.Device || q.VG != pv.VG || !slices.Equal(q.ByID, pv.ByID) {
			t.Errorf("activation probe: pv %s %+v, the pass reads %+v", name, q, pv)
		}
	}
	p, err := Compute(autoactivationStack(), h)
	if err != nil {
		t.Fatal(err)
	}
	if !p.AllActive() {
		t.Errorf("activation probe: not all active: %q %q", p.Blocked(), p.Absent())
	}
	h = quick("pve-vm--100--disk--0")
	p, _ = Compute(autoactivationStack(), h)
	if got, want := inactiveOf(p), []string{"vg pve: inactive LVs pve/vm-100-disk-0"}; p.AllActive() || !slices.Equal(got, want) {
		t.Errorf("pve-vm--100--disk--0 gone from device-mapper: activate %q, want %q", got, want)
	}
}

// AllActive holds only when every step is Active: an Absent VG is Done (no
// wait brings it) but not active, so keel activate does not tell READY
// before its probe pass on it.
func TestAllActive(t *testing.T) {
	for _, tc := range []struct {
		steps           []Status
		done, allActive bool
	}{
		{[]Status{Active, Active}, true, true},
		{[]Status{Active, Absent}, true, false},
		{[]Status{Active, Waiting}, false, false},
		{[]Status{Activate}, false, false},
	} {
		var p Plan
		for _, s := range tc.steps {
			p.Steps = append(p.Steps, Step{Status: s})
		}
		if p.Done() != tc.done || p.AllActive() != tc.allActive {
			t.Errorf("%v: Done %v AllActive %v, want %v %v", tc.steps, p.Done(), p.AllActive(), tc.done, tc.allActive)
		}
	}
}

// ranCmds records the commands its Runner ran.
type ranCmds struct {
	hostio.Runner
	mu  sync.Mutex
	ran []string
}

func (r *ranCmds) Run(ctx context.Context, c hostio.Cmd) (hostio.Result, error) {
	r.mu.Lock()
	r.ran = append(r.ran, c.String())
	r.mu.Unlock()
	return r.Runner.Run(ctx, c)
}

// took returns the commands run since the last call.
func (r *ranCmds) took() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ran := r.ran
	r.ran = nil
	return ran
}

// LVM's configuration, which the activation rules read
// (auto_activation_volume_list), is read beside the report, while lvm2
// still activates, not after it: between lvm2's end and READY only
// device-mapper is read, and the configuration is the pass's.
func TestActivationReportReadsLVMConfigBeside(t *testing.T) {
	full, src := probeNode(t, autoactivationNode)
	rec := &ranCmds{Runner: src.Runner}
	src.Runner = rec
	r, err := probes.ReadActivationReport(context.Background(), src, nil)
	if err != nil {
		t.Fatal(err)
	}
	config := probes.LVMConfigCmd().String()
	if ran := rec.took(); !slices.Contains(ran, config) {
		t.Errorf("the report ran %q, not %s", ran, config)
	}
	h, err := probes.ProbeActivation(context.Background(), src, r)
	if err != nil {
		t.Fatal(err)
	}
	if ran := rec.took(); slices.Contains(ran, config) {
		t.Errorf("after lvm2's activation keel ran %q, %s among them", ran, config)
	}
	if len(h.LVMConfig.Values) == 0 || !maps.Equal(h.LVMConfig.Values, full.LVMConfig.Values) {
		t.Errorf("LVM's configuration %v, the pass reads %v", h.LVMConfig.Values, full.LVMConfig.Values)
	}
}
