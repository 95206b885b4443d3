package plan

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/schema"
)

// The capture of e2e/wipe/guard.sh after its setup, planned against its
// desired state: svg is behind a storage.cfg entry with shared 1, and
// tvg/vm-103-disk-0 and vm-104-disk-0 are thin LVs of tvg/pooln, created
// with -Z n.
func TestPlanAbsentGuards(t *testing.T) {
	s, err := hostio.ReadSnapshotFile("../apply/wipe/testdata/node-guard.txtar")
	if err != nil {
		t.Fatal(err)
	}
	h, err := probes.Probe(context.Background(), hostio.Replay(s))
	if err != nil {
		t.Fatal(err)
	}
	d, err := schema.NewLoader().Load("../../e2e/wipe/guard.cue")
	if err != nil {
		t.Fatal(err)
	}
	r := Plan(d.Config, h)
	got := keys(r.Findings)
	for _, want := range []string{"lv.absent_shared@svg/vm-200-disk-0", "thin.unzeroed_reuse@tvg/pooln",
		"lv.absent@tvg/vm-102-disk-0", "lv.absent@tvg/vm-103-disk-0", "lv.absent@gvg/old"} {
		if !slices.Contains(got, want) {
			t.Errorf("no %s in %q", want, got)
		}
	}
	// vm-103-disk-0 and vm-104-disk-0 are both in tvg/pooln: one finding.
	if n := len(slices.DeleteFunc(slices.Clone(got), func(k string) bool { return k != "thin.unzeroed_reuse@tvg/pooln" })); n != 1 {
		t.Errorf("thin.unzeroed_reuse@tvg/pooln raised %d times", n)
	}
	if slices.Contains(got, "lv.absent@svg/vm-200-disk-0") || slices.Contains(got, "thin.unzeroed_reuse@tvg/pool") {
		t.Errorf("findings %q", got)
	}
	for _, a := range r.Actions {
		if strings.HasPrefix(a.Object, "svg/") {
			t.Errorf("action %s planned in the shared vg svg", a.ID)
		}
	}
	for _, f := range r.Findings {
		switch f.Key() {
		case "lv.absent_shared@svg/vm-200-disk-0":
			if !strings.Contains(f.Remedy, "pvesm free san:vm-200-disk-0") || f.Severity != Error {
				t.Errorf("%s: %+v", f.Key(), f)
			}
		case "thin.unzeroed_reuse@tvg/pooln":
			if f.Remedy != "lvchange -Z y tvg/pooln" {
				t.Errorf("remedy %q", f.Remedy)
			}
		case "lv.absent@tvg/vm-102-disk-0":
			if !strings.Contains(f.Remedy, "discard in steps") {
				t.Errorf("a thin LV's removal says %q", f.Remedy)
			}
		}
	}
}

// The passes e2e/wipe/sharedcfg.sh recorded, planned against its desired
// states: a Proxmox VE node before pmxcfs mounted /etc/pve, a VG declared
// shared, a storage.cfg at the configured path. Each absent LV is held
// with lv.absent_shared and its way forward, and nothing is planned in it.
func TestPlanSharedCfg(t *testing.T) {
	for _, c := range []struct {
		name, lv, remedy string
		also             string // another finding key, "" for none
	}{
		{"window", "pvesan/vm-201-disk-0", "wait for pve-cluster to mount /etc/pve (systemctl status pve-cluster); keel removes pvesan/vm-201-disk-0 on a later pass if no Proxmox storage shares vg pvesan",
			"pve.storage_cfg_unreadable@/etc/pve/storage.cfg"},
		{"declared", "sansh/vm-202-disk-0", "on the node that owns it: lvremove sansh/vm-202-disk-0; then drop vm-202-disk-0 from the absent list of vg sansh", ""},
		{"custom", "pvecustom/vm-203-disk-0", "on the node that owns it: pvesm free san3:vm-203-disk-0; then drop vm-203-disk-0 from the absent list of vg pvecustom", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := replayHost(t, "sharedcfg-"+c.name)
			d, err := schema.NewLoader().Load("../../e2e/wipe/sharedcfg-" + c.name + ".cue")
			if err != nil {
				t.Fatal(err)
			}
			r := Plan(d.Config, h)
			got := keys(r.Findings)
			if c.also != "" && !slices.Contains(got, c.also) {
				t.Errorf("no %s in %q", c.also, got)
			}
			if c.also == "" && slices.ContainsFunc(got, func(k string) bool { return strings.HasPrefix(k, string(PVEStorageCfgUnreadable)) }) {
				t.Errorf("findings %q", got)
			}
			found := false
			for _, f := range r.Findings {
				if f.Key() == "lv.absent_shared@"+c.lv {
					found = true
					if f.Remedy != c.remedy || f.Severity != Error {
						t.Errorf("%s: severity %s, remedy %q", f.Key(), f.Severity, f.Remedy)
					}
				}
			}
			if !found || slices.Contains(got, "lv.absent@"+c.lv) {
				t.Errorf("findings %q", got)
			}
			if len(r.Actions) != 0 {
				t.Errorf("actions planned: %v", r.Actions)
			}
		})
	}
}
