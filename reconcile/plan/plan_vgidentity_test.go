package plan

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/state"
	"github.com/keel-storage/keel/schema"
	"github.com/keel-storage/keel/schema/spec"
)

// The captures of e2e/ownership/foreignvg.sh (reconcile/apply/wipe/testdata):
// node-foreign.txtar has vmdata on the disk vgidb while
// e2e/ownership/foreignvg.cue declares it on vgida, with vm-101-disk-0 (declared
// absent) and no thin pool tpool (declared with create: true);
// node-uuid.txtar has vmdata on vgida again, made anew after keel check
// recorded its first vg_uuid in state-uuid.json.
func foreignInputs(t *testing.T, node string) (*spec.Config, *model.Host) {
	t.Helper()
	s, err := hostio.ReadSnapshotFile("../apply/wipe/testdata/" + node)
	if err != nil {
		t.Fatal(err)
	}
	h, err := probes.Probe(context.Background(), hostio.Replay(s))
	if err != nil {
		t.Fatal(err)
	}
	d, err := schema.NewLoader().Load("../../e2e/ownership/foreignvg.cue")
	if err != nil {
		t.Fatal(err)
	}
	return d.Config, h
}

// findingOf returns the finding id@object of r, or nil.
func findingOf(r Result, key string) *Finding {
	for i, f := range r.Findings {
		if string(f.ID)+"@"+f.Object == key {
			return &r.Findings[i]
		}
	}
	return nil
}

func TestPlanForeignVG(t *testing.T) {
	d, h := foreignInputs(t, "node-foreign.txtar")
	r := PlanWith(d, h, Memory{FirstPass: true})
	if got := keys(r.Findings); !slices.Equal(got, []string{"vg.foreign@vmdata"}) {
		t.Errorf("findings %q, want vg.foreign@vmdata alone (no lv.absent, no thin.missing)", got)
	}
	if len(r.Actions) != 0 {
		t.Errorf("actions planned in a foreign VG: %+v", r.Actions)
	}
	f := findingOf(r, "vg.foreign@vmdata")
	if f == nil || f.Severity != Error || !strings.Contains(f.Message, "/dev/sdb") ||
		!strings.Contains(f.Remedy, "vgrename "+h.VGs["vmdata"].UUID+" vmdata-other") {
		t.Errorf("finding %+v", f)
	}
	// Never recorded: the first sight of a foreign VG is not the VG meant.
	if seen, gone := VGSightings(d, h); len(seen) != 0 || len(gone) != 0 {
		t.Errorf("sightings %v, gone %v; want none", seen, gone)
	}
	// Declared on the disk it is on, the same host plans the removal and
	// the pool.
	d.VolumeGroups["vmdata"] = withPVs(d.VolumeGroups["vmdata"], "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_vgidb")
	r = PlanWith(d, h, Memory{FirstPass: true})
	for _, want := range []string{"lv.absent:vmdata/vm-101-disk-0", "thin.create:vmdata/tpool"} {
		if !slices.ContainsFunc(r.Actions, func(a Action) bool { return a.ID == want }) {
			t.Errorf("on its declared disk: no action %s", want)
		}
	}
	if seen, _ := VGSightings(d, h); seen["vmdata"] != h.VGs["vmdata"].UUID {
		t.Errorf("on its declared disk: sightings %v", seen)
	}
	// Declared on both disks: the declared VG, which keel extends with
	// the declared disk it is not on (vgextend, after the blank check).
	d.VolumeGroups["vmdata"] = withPVs(d.VolumeGroups["vmdata"], "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_vgida",
		"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_vgidb")
	r = PlanWith(d, h, Memory{FirstPass: true})
	if f := findingOf(r, "vg.pv_not_in_vg@vmdata"); f == nil || f.Severity != Warning ||
		!strings.Contains(f.Message, "declared PVs not in VG vmdata: /dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_vgida") {
		t.Errorf("finding %+v in %q", f, keys(r.Findings))
	}
	if a := actionOf(r, "vg.extend:vmdata"); a == nil || !slices.Equal(a.Commands[len(a.Commands)-1],
		[]string{"vgextend", "vmdata", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_vgida"}) {
		t.Errorf("vgextend %+v", a)
	}
	// Every PV of the VG is declared: no drift.
	if f := findingOf(r, "vg.pvs_drift@vmdata"); f != nil {
		t.Errorf("drift %+v with every PV declared", f)
	}
	if !slices.ContainsFunc(r.Actions, func(a Action) bool { return a.ID == "lv.absent:vmdata/vm-101-disk-0" }) {
		t.Error("drift held the VG")
	}
}

func withPVs(vg spec.VolumeGroup, pvs ...string) spec.VolumeGroup {
	vg.PVs = pvs
	return vg
}

func TestPlanVGUUIDChanged(t *testing.T) {
	d, h := foreignInputs(t, "node-uuid.txtar")
	b, err := os.ReadFile("../apply/wipe/testdata/state-uuid.json")
	if err != nil {
		t.Fatal(err)
	}
	st := state.New()
	if err := json.Unmarshal(b, st); err != nil {
		t.Fatal(err)
	}
	now := h.VGs["vmdata"].UUID
	r := PlanWith(d, h, Memory{VGs: st.VGs})
	if got := keys(r.Findings); !slices.Equal(got, []string{"vg.uuid_changed@vmdata"}) {
		t.Errorf("findings %q, want vg.uuid_changed@vmdata alone", got)
	}
	if len(r.Actions) != 0 {
		t.Errorf("actions planned under another UUID: %+v", r.Actions)
	}
	f := findingOf(r, "vg.uuid_changed@vmdata")
	if f == nil || f.Observed != "vg_uuid "+now || f.Expected != "vg_uuid "+st.VGs["vmdata"].UUID ||
		!strings.Contains(f.Remedy, "keel ack-vg vmdata "+now) {
		t.Errorf("finding %+v", f)
	}
	// Without a record (a first pass) it is the declared VG.
	if r := PlanWith(d, h, Memory{}); findingOf(r, "vg.uuid_changed@vmdata") != nil || len(r.Actions) == 0 {
		t.Errorf("no record: findings %q, %d actions", keys(r.Findings), len(r.Actions))
	}
	// Acknowledged, keel acts in it again.
	st.AckVG("vmdata", now, st.VGs["vmdata"].FirstSeen)
	if r := PlanWith(d, h, Memory{VGs: st.VGs}); findingOf(r, "vg.uuid_changed@vmdata") != nil || len(r.Actions) == 0 {
		t.Errorf("acknowledged: findings %q, %d actions", keys(r.Findings), len(r.Actions))
	}
}

// A declared VG that is not there is forgotten only when keel may make it
// again (create: true); otherwise its record stays, so a VG made again by
// hand is still another UUID.
func TestVGSightingsGone(t *testing.T) {
	d, h := foreignInputs(t, "node-foreign.txtar")
	d.VolumeGroups["made"] = spec.VolumeGroup{PVs: []string{"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_vgida"}, Create: true}
	d.VolumeGroups["byhand"] = spec.VolumeGroup{PVs: []string{"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_vgida"}}
	if _, gone := VGSightings(d, h); !slices.Equal(gone, []string{"made"}) {
		t.Errorf("gone %q, want [made]", gone)
	}
	h.Errors = append(h.Errors, "lvm fullreport: exit status 5")
	if _, gone := VGSightings(d, h); len(gone) != 0 {
		t.Errorf("gone %q on a probe with errors, want none", gone)
	}
}
