package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/schema"
	"github.com/keel-storage/keel/schema/spec"
)

// The captures of e2e/health/multipath.sh (KEEL_MULTIPATH_SNAPSHOT_DIR):
// VG mpvg on the multipath map mpkeel, whose two paths are the SCSI disk
// of serial mp1 and a loop device over it; healthy, with the loop path
// failed (dmsetup message mpkeel 0 fail_path), and with both failed.
// The desired states are the scenario's own: mpvg declared on the map, and
// on the SCSI path instead.
func multipathCase(t *testing.T, snapshot, desired string) (Result, *model.Host) {
	t.Helper()
	h := replayHost(t, snapshot)
	d, err := schema.NewLoader().Load("../../e2e/health/" + desired + ".cue")
	if err != nil {
		t.Fatal(err)
	}
	return Plan(d.Config, h), h
}

func multipathIDs(r Result) []string {
	var out []string
	for _, f := range r.Findings {
		if strings.HasPrefix(string(f.ID), "pv.multipath") {
			out = append(out, string(f.ID)+"@"+f.Object)
		}
	}
	return out
}

func TestMultipathHealthy(t *testing.T) {
	r, _ := multipathCase(t, "multipath-healthy", "mpmap")
	if ids := multipathIDs(r); len(ids) != 0 {
		t.Errorf("healthy map: %v", ids)
	}
}

// One path failed: pv.multipath_degraded names it by kernel name and
// device number, and its remedies are commands that exist.
func TestMultipathDegraded(t *testing.T) {
	r, h := multipathCase(t, "multipath-degraded", "mpmap")
	if ids := multipathIDs(r); !slices.Equal(ids, []string{"pv.multipath_degraded@mpvg"}) {
		t.Fatalf("findings %v", ids)
	}
	m := h.Multipath["mpkeel"]
	failed := m.Failed()
	if len(failed) != 1 || !strings.HasPrefix(failed[0], "loop") {
		t.Fatalf("failed paths %v, want the loop device", failed)
	}
	var dev string
	for _, p := range m.Paths() {
		if !p.Active {
			dev = p.Dev
		}
	}
	f := findingsOf(r, PVMultipathDegraded)[0]
	for _, want := range []string{failed[0], "1 of 2 paths failed", "/dev/mapper/mpkeel"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("message %q lacks %q", f.Message, want)
		}
	}
	for _, want := range []string{"dmsetup status mpkeel", "dmsetup message mpkeel 0 reinstate_path " + dev} {
		if !strings.Contains(f.Remedy, want) {
			t.Errorf("remedy %q lacks %q", f.Remedy, want)
		}
	}
	if f.Severity != Warning {
		t.Errorf("severity %v", f.Severity)
	}
}

// Every path failed: pv.multipath_no_path, critical, and not degraded too.
func TestMultipathNoPath(t *testing.T) {
	r, h := multipathCase(t, "multipath-nopath", "mpmap")
	if n := h.Multipath["mpkeel"].ActivePaths(); n != 0 {
		t.Fatalf("capture has %d active paths", n)
	}
	if ids := multipathIDs(r); !slices.Equal(ids, []string{"pv.multipath_no_path@mpvg"}) {
		t.Fatalf("findings %v", ids)
	}
	if f := findingsOf(r, PVMultipathNoPath)[0]; f.Severity != Critical {
		t.Errorf("severity %v", f.Severity)
	}
}

// The VG declared on one path of the map: pv.multipath_component names the
// map, keel plans nothing in the VG (no pvcreate, vgextend or vgcreate on a
// disk that holds the VG), and does not call the VG foreign.
func TestMultipathComponent(t *testing.T) {
	r, _ := multipathCase(t, "multipath-healthy", "mppath")
	if ids := multipathIDs(r); !slices.Equal(ids, []string{"pv.multipath_component@mpvg"}) {
		t.Fatalf("findings %v", ids)
	}
	f := findingsOf(r, PVMultipathComponent)[0]
	if f.Expected != "/dev/mapper/mpkeel" || !strings.Contains(f.Remedy, "declare /dev/mapper/mpkeel instead of /dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_mp1") {
		t.Errorf("expected %q, remedy %q", f.Expected, f.Remedy)
	}
	for _, id := range []FindingID{VGForeign, VGPVNotInVG, VGPVsDrift} {
		if fs := findingsOf(r, id); len(fs) != 0 {
			t.Errorf("also %s: %s", id, fs[0].Message)
		}
	}
	for _, a := range r.Actions {
		if a.Object == "mpvg" || strings.HasPrefix(a.Object, "mpvg/") {
			t.Errorf("action planned in the held VG: %s", a.ID)
		}
	}
}

// Without the component rule keel would act on the path: the same host and
// a VG not yet created, declared on the path with create: true, is held
// too (no vgcreate on a disk that holds a VG through the map).
func TestMultipathComponentNoCreate(t *testing.T) {
	h := replayHost(t, "multipath-healthy")
	d := &spec.Config{VolumeGroups: map[string]spec.VolumeGroup{
		"newvg": {PVs: []string{"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_mp1"}, Create: true}}}
	r := Plan(d, h)
	if ids := multipathIDs(r); !slices.Equal(ids, []string{"pv.multipath_component@newvg"}) {
		t.Fatalf("findings %v", ids)
	}
	if len(r.Actions) != 0 {
		t.Errorf("actions %v", r.Actions)
	}
}
