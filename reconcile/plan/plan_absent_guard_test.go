package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/schema"
	"github.com/keel-storage/keel/schema/spec"
)

// The capture of e2e/wipe/guard.sh after its setup, planned against its
// desired state: svg is behind a storage.cfg entry with shared 1, and
// tvg/vm-103-disk-0 and vm-104-disk-0 are thin LVs of tvg/pooln, created
// with -Z n: their removals are held, one finding each, and no action.
func TestPlanAbsentGuards(t *testing.T) {
	r := planCapture(t, "node-guard.txtar", "wipe/guard.cue")
	got := keys(r.Findings)
	for _, want := range []string{"lv.absent_shared@svg/vm-200-disk-0", "lv.absent_unzeroed_pool@tvg/vm-103-disk-0",
		"lv.absent_unzeroed_pool@tvg/vm-104-disk-0", "lv.absent@tvg/vm-102-disk-0", "lv.absent@gvg/old"} {
		if !slices.Contains(got, want) {
			t.Errorf("no %s in %q", want, got)
		}
	}
	for _, no := range []string{"lv.absent@svg/vm-200-disk-0", "lv.absent@tvg/vm-103-disk-0", "lv.absent@tvg/vm-104-disk-0",
		"thin.unzeroed_reuse@tvg/pooln", "thin.unzeroed_reuse@tvg/pool"} {
		if slices.Contains(got, no) {
			t.Errorf("%s in %q", no, got)
		}
	}
	for _, a := range r.Actions {
		if strings.HasPrefix(a.Object, "svg/") || strings.HasPrefix(a.Object, "tvg/vm-103") || strings.HasPrefix(a.Object, "tvg/vm-104") {
			t.Errorf("action %s planned for %s", a.ID, a.Object)
		}
	}
	for _, f := range r.Findings {
		switch f.Key() {
		case "lv.absent_shared@svg/vm-200-disk-0":
			if !strings.Contains(f.Remedy, "pvesm free san:vm-200-disk-0") || f.Severity != Error {
				t.Errorf("%s: %+v", f.Key(), f)
			}
		case "lv.absent_unzeroed_pool@tvg/vm-103-disk-0":
			if f.Remedy != "lvchange -Z y tvg/pooln, or set removal: allowUnzeroedThinReuse: true" || f.Severity != Error ||
				!strings.Contains(f.Message, "thin pool tvg/pooln does not zero new chunks") {
				t.Errorf("%s: %+v", f.Key(), f)
			}
		case "lv.absent@tvg/vm-102-disk-0":
			if !strings.Contains(f.Remedy, "discard in steps") {
				t.Errorf("a thin LV's removal says %q", f.Remedy)
			}
		}
	}
}

// The passes e2e/ownership/sharedcfg.sh recorded, planned against its desired
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
			d, err := schema.NewLoader().Load("../../e2e/ownership/sharedcfg-" + c.name + ".cue")
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

// The capture of e2e/ownership/guestref.sh after its setup, planned against its
// desired state: the three absent LVs a guest's configuration names raise
// lv.absent_referenced naming the file and line, and only vm-107-disk-0,
// which nothing names, is removed.
func TestPlanAbsentReferenced(t *testing.T) {
	r := planCapture(t, "node-guestref.txtar", "ownership/guestref.cue")
	want := map[string]string{
		"guest-vg/vm-105-disk-0": "/etc/pve/nodes/othernode/qemu-server/105.conf:7 (VM 105 unused0 store:vm-105-disk-0)",
		"guest-vg/vm-105-disk-1": "/etc/pve/nodes/othernode/qemu-server/105.conf:13 (VM 105 snapshot before-upgrade scsi0 store:vm-105-disk-1)",
		"guest-vg/kvm-web-disk":  "/etc/libvirt/qemu/web.xml:7 (libvirt domain web source dev /dev/mapper/guest--vg-kvm--web--disk)",
	}
	remedy := map[string]string{
		"guest-vg/vm-105-disk-0": "on node othernode: qm disk unlink 105 --idlist unused0; or keep it: drop vm-105-disk-0 from the absent list of vg guest-vg",
		"guest-vg/vm-105-disk-1": "on node othernode: qm delsnapshot 105 before-upgrade; or keep it: drop vm-105-disk-1 from the absent list of vg guest-vg",
		"guest-vg/kvm-web-disk":  "virsh detach-disk web vda --persistent; or keep it: drop kvm-web-disk from the absent list of vg guest-vg",
	}
	for _, f := range r.Findings {
		if f.ID != LVAbsentReferenced {
			continue
		}
		where, ok := want[f.Object]
		if !ok {
			t.Errorf("unexpected %s", f.Key())
			continue
		}
		delete(want, f.Object)
		if !strings.Contains(f.Message, where) || f.Remedy != remedy[f.Object] || f.Severity != Error {
			t.Errorf("%s: message %q remedy %q severity %v", f.Key(), f.Message, f.Remedy, f.Severity)
		}
	}
	for obj := range want {
		t.Errorf("no lv.absent_referenced on %s", obj)
	}
	var wipes []string
	for _, a := range r.Actions {
		if a.Kind == KindWipe {
			wipes = append(wipes, a.Object)
		}
	}
	if !slices.Equal(wipes, []string{"guest-vg/vm-107-disk-0"}) {
		t.Errorf("wipes planned %q, want only guest-vg/vm-107-disk-0", wipes)
	}
}

// planCapture plans the desired state e2e/<cue> against the node
// snapshot reconcile/apply/wipe/testdata/<snapshot> that its scenario
// recorded.
func planCapture(t *testing.T, snapshot, cue string) Result {
	t.Helper()
	h := replayFile(t, "../apply/wipe/testdata/"+snapshot)
	d, err := schema.NewLoader().Load("../../e2e/" + cue)
	if err != nil {
		t.Fatal(err)
	}
	return Plan(d.Config, h)
}

// With removal.allowUnzeroedThinReuse the same LVs are removed, and the pool
// is reported once (thin.unzeroed_reuse), a warning with the remedy.
func TestPlanAbsentUnzeroedOptIn(t *testing.T) {
	h := guardHost(t)
	d, err := schema.NewLoader().Load("../../e2e/wipe/guard.cue")
	if err != nil {
		t.Fatal(err)
	}
	d.Config.Removal.AllowUnzeroedThinReuse = true
	r := Plan(d.Config, h)
	got := keys(r.Findings)
	for _, want := range []string{"lv.absent@tvg/vm-103-disk-0", "lv.absent@tvg/vm-104-disk-0", "thin.unzeroed_reuse@tvg/pooln"} {
		if !slices.Contains(got, want) {
			t.Errorf("no %s in %q", want, got)
		}
	}
	if n := len(slices.DeleteFunc(slices.Clone(got), func(k string) bool { return k != "thin.unzeroed_reuse@tvg/pooln" })); n != 1 {
		t.Errorf("thin.unzeroed_reuse@tvg/pooln raised %d times", n)
	}
	if slices.ContainsFunc(got, func(k string) bool { return strings.HasPrefix(k, "lv.absent_unzeroed_pool@") }) {
		t.Errorf("held although opted in: %q", got)
	}
	for _, f := range r.Findings {
		if f.Key() == "thin.unzeroed_reuse@tvg/pooln" && (f.Remedy != "lvchange -Z y tvg/pooln" || f.Severity != Warning) {
			t.Errorf("%s: %+v", f.Key(), f)
		}
	}
}

// guardHost is the capture of e2e/wipe/guard.sh after its setup.
func guardHost(t *testing.T) *model.Host {
	t.Helper()
	return replayFile(t, "../apply/wipe/testdata/node-guard.txtar")
}

// The capture of e2e/wipe/wipemode.sh after its setup, against its desired
// state (removal.mode discard): vms/vm-100-disk-0 lies on the SSD added to
// the VG on VDO, so the finding and the action say it is zeroed, as the
// wipe will do; tvg/vm-103-disk-0 of tvg/pooln (zeroing off) is held.
func TestPlanAbsentWipeMode(t *testing.T) {
	h := replayFile(t, "../apply/wipe/testdata/node-wipemode.txtar")
	d, err := schema.NewLoader().Load("../../e2e/wipe/wipemode.cue")
	if err != nil {
		t.Fatal(err)
	}
	r := Plan(d.Config, h)
	var found int
	for _, f := range r.Findings {
		switch f.Key() {
		case "lv.absent@vms/vm-100-disk-0":
			found++
			if f.Remedy != "rename to del-vm-100-disk-0, zeroout in steps of 32M, lvremove" {
				t.Errorf("remedy %q", f.Remedy)
			}
		case "lv.absent_unzeroed_pool@tvg/vm-103-disk-0":
			found++
		}
	}
	if found != 2 {
		t.Errorf("findings %q", keys(r.Findings))
	}
	var summaries []string
	for _, a := range r.Actions {
		if strings.HasPrefix(a.ID, "lv.absent:") {
			summaries = append(summaries, a.Summary)
		}
	}
	if want := []string{"wipe (zeroout) and remove vms/vm-100-disk-0, as the desired state asks"}; !slices.Equal(summaries, want) {
		t.Errorf("removals %q, want %q", summaries, want)
	}
}

// The Proxmox VE 9 volume chain of guard.sh's capture (vm-105-disk-0.qcow2
// and its snapshot LV snap_vm-105-disk-0_s1.qcow2): either LV declared
// absent alone raises lv.absent_chain with the way forward and plans no
// removal; both absent plan both removals.
func TestPlanAbsentChain(t *testing.T) {
	h := guardHost(t)
	const head, snap = "vm-105-disk-0.qcow2", "snap_vm-105-disk-0_s1.qcow2"
	for _, c := range []struct {
		absent []string
		held   string
		remedy string
	}{
		{[]string{snap}, "tvg/" + snap, "qm delsnapshot 105 s1"},
		{[]string{head}, "tvg/" + head, "pvesm free chain:" + head},
		{[]string{head, snap}, "", ""},
	} {
		d, err := schema.NewLoader().Load("../../e2e/wipe/guard.cue")
		if err != nil {
			t.Fatal(err)
		}
		vg := d.Config.VolumeGroups["tvg"]
		vg.Absent = nil
		for _, n := range c.absent {
			vg.Absent = append(vg.Absent, spec.AbsentLV{Name: n})
		}
		d.Config.VolumeGroups["tvg"] = vg
		r := Plan(d.Config, h)
		var chain []Finding
		for _, f := range r.Findings {
			if f.ID == LVAbsentChain {
				chain = append(chain, f)
			}
		}
		var removals []string
		for _, a := range r.Actions {
			if a.Kind == KindWipe && strings.Contains(a.Object, "105") {
				removals = append(removals, a.Object)
			}
		}
		if c.held == "" {
			if len(chain) != 0 || len(removals) != 2 {
				t.Errorf("absent %q: findings %+v, removals %q; want both removed", c.absent, chain, removals)
			}
			continue
		}
		if len(chain) != 1 || chain[0].Object != c.held || chain[0].Severity != Error || !strings.Contains(chain[0].Remedy, c.remedy) || len(removals) != 0 {
			t.Errorf("absent %q: findings %+v, removals %q; want %s held with %q", c.absent, chain, removals, c.held, c.remedy)
		}
	}
}
