package plan

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keel-storage/keel/schema"
)

// Every scenario's desired state again, with each declared VG declared
// shared (shared: true): no action that runs a command or wipes is left on
// an object of those VGs, whatever plan function made it, and each one it
// held is named by a vg.shared_change finding on its object, whose remedy
// carries the action's commands. lvm.conf, bcache sysfs writes, keel's udev
// rules and report-only actions stay (sharedSafe). The scenarios that hold
// nothing prove the rest: at least one must hold a command.
func TestPlanSharedVGHoldsEveryChange(t *testing.T) {
	held := 0
	for _, s := range scenarios {
		if s.desired == "" {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			h := replayHost(t, s.snapshot)
			d := loadDesired(t, s.desired, h)
			before := Plan(d, h)
			for _, name := range slices.Sorted(maps.Keys(d.VolumeGroups)) {
				vg := d.VolumeGroups[name]
				vg.Shared = true
				d.VolumeGroups[name] = vg
			}
			after := Plan(d, h)
			findings := map[string]Finding{}
			for _, f := range after.Findings {
				if f.ID == VGSharedChange {
					findings[f.Object] = f
				}
			}
			kept := map[string]bool{}
			for _, a := range after.Actions {
				kept[a.ID] = true
				if !sharedSafe(a) {
					t.Errorf("%s (%s) planned on a shared VG", a.ID, a.Kind)
				}
			}
			for _, a := range before.Actions {
				if kept[a.ID] {
					continue
				}
				if a.Kind == KindWipe {
					continue // absentGuards holds it first (lv.absent_shared)
				}
				held++
				f, ok := findings[a.Object]
				switch {
				case !ok:
					t.Errorf("%s held without vg.shared_change on %s", a.ID, a.Object)
				case len(a.Commands) > 0 && !strings.Contains(f.Remedy, shellAnd(a.Commands)):
					t.Errorf("%s: remedy %q lacks %q", a.ID, f.Remedy, shellAnd(a.Commands))
				case !strings.HasPrefix(f.Remedy, "on the node that owns "+a.Object+": "):
					t.Errorf("%s: remedy %q", a.ID, f.Remedy)
				case !strings.Contains(f.Message, "the desired state declares it shared (shared: true)"):
					t.Errorf("%s: message %q", a.ID, f.Message)
				}
			}
		})
	}
	if held == 0 {
		t.Error("no scenario planned an action that the shared VGs held")
	}
}

// The capture of e2e/ownership/sharedcfg.sh, section 3 (Proxmox storage
// san3 has shared 1 for VG pvecustom), with a thin pool to create declared
// in pvecustom: the lvcreate is not planned, and vg.shared_change names
// the storage and the commands to run on the owning node.
func TestPlanSharedVGProxmox(t *testing.T) {
	h := replayHost(t, "sharedcfg-custom")
	base, err := os.ReadFile("../../e2e/ownership/sharedcfg-custom.cue")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "d.cue")
	cue := string(base) + "volumeGroups: pvecustom: thinPools: tp: {create: true, size: \"64M\", chunkSize: \"64K\"}\n"
	if err := os.WriteFile(path, []byte(cue), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := schema.NewLoader().Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r := Plan(d.Config, h)
	for _, a := range r.Actions {
		if strings.HasPrefix(a.Object, "pvecustom") && !sharedSafe(a) {
			t.Errorf("planned %s on pvecustom, which Proxmox storage san3 shares", a.ID)
		}
	}
	var f *Finding
	for i := range r.Findings {
		if r.Findings[i].Key() == "vg.shared_change@pvecustom/tp" {
			f = &r.Findings[i]
		}
	}
	if f == nil {
		t.Fatalf("no vg.shared_change@pvecustom/tp in %q", keys(r.Findings))
	}
	const remedy = "on the node that owns pvecustom/tp: lvcreate -y --type thin-pool -L 64M --chunksize 64K --addtag keel_create -n tp pvecustom && lvchange --deltag keel_create pvecustom/tp"
	if f.Remedy != remedy || f.Severity != Warning || !strings.Contains(f.Message, "Proxmox storage san3 has shared 1 in /etc/keel-pve/storage.cfg") {
		t.Errorf("severity %s\nmessage %q\nremedy %q\nwant    %q", f.Severity, f.Message, f.Remedy, remedy)
	}
}

// An autoextend profile is written and attached in one KindFile action
// whose lvchange --metadataprofile commits the VG's metadata: on a shared
// VG it is held like any command, not let through as a host file.
func TestPlanSharedVGHoldsAutoextendProfile(t *testing.T) {
	h := replayHost(t, "sizes-autoextend")
	d := loadDesired(t, "sizes-autoextend", h)
	vg := d.VolumeGroups["autovg"]
	vg.Shared = true
	d.VolumeGroups["autovg"] = vg
	r := Plan(d, h)
	for _, a := range r.Actions {
		if a.Object == "autovg/tp" {
			t.Errorf("%s (%s, %q) planned on shared vg autovg", a.ID, a.Kind, a.Commands)
		}
	}
	var held bool
	for _, f := range r.Findings {
		if f.ID == VGSharedChange && f.Object == "autovg/tp" && strings.Contains(f.Remedy, "lvchange --metadataprofile") {
			held = true
		}
	}
	if !held {
		t.Errorf("no vg.shared_change naming lvchange --metadataprofile on autovg/tp: %q", keys(r.Findings))
	}
}
