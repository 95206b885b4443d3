package removal

import (
	"errors"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/model"
)

// probes/testdata/snapshots/pve.txtar has a Proxmox lvm storage on vdovg
// with "shared 0": not shared, and removal goes ahead.
func TestSharedVGsProxmoxShared0(t *testing.T) {
	h := snapshotHost(t, "../../../probes/testdata/snapshots/pve.txtar")
	if h.Proxmox == nil || len(h.Proxmox.Storages) == 0 {
		t.Fatal("the capture has no storage.cfg")
	}
	if got := SharedVGs(h); len(got) != 0 {
		t.Fatalf("shared VGs %v, want none (shared 0)", got)
	}
}

// lvmlockd could not run in the test guest, so the lock type is set on a
// captured model: a VG with a lock type, or with LVM's shared flag, is
// shared, and every removal in it is refused with the command for the
// owning node.
func TestSharedVGsLVMLockd(t *testing.T) {
	h := snapshotHost(t, "../../apply/wipe/testdata/node-setup.txtar")
	h.VGs["vms"].LockType = "sanlock"
	h.VGs["vdolab"].Shared = true
	o := observe(h)
	if got := o.shared["vms"].Why; got != "lvmlockd (lock type sanlock)" {
		t.Fatalf("vms: %q", got)
	}
	if got := o.shared["vdolab"].Why; !strings.Contains(got, "shared or clustered") {
		t.Fatalf("vdolab: %q", got)
	}
	_, err := Plan(o.Host, scenarioDecl, Request{Names: []string{"vms/vm-100-disk-0"}, RequireAbsent: true, Known: seen(scenarioDecl)})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "remove it on the node that owns it (there: lvremove vms/vm-100-disk-0)") {
		t.Fatalf("got %v", err)
	}
	h.VGs["vms"].LockType = "none"
	if _, ok := SharedVGs(h)["vms"]; ok {
		t.Fatal(`lock type "none" counted as shared`)
	}
}

// A storage.cfg keel cannot parse leaves no VG known to be local.
func TestSharedVGsUnreadableStorageCfg(t *testing.T) {
	h := snapshotHost(t, "../../../probes/testdata/snapshots/pve.txtar")
	h.Proxmox = &model.Proxmox{Errors: []string{"storage.cfg: line 3: option before any storage"}}
	got := SharedVGs(h)
	if len(got) != len(h.VGs) || !strings.Contains(got["vdovg"].Why, "could not be read") {
		t.Fatalf("got %v", got)
	}
}

// sharedCfg replays a pass e2e/ownership/sharedcfg.sh recorded in the test guest.
func sharedCfg(t *testing.T, name string) *model.Host {
	return snapshotHost(t, "../testdata/snapshots/"+name+".txtar")
}

// A Proxmox VE node whose /etc/pve is not mounted yet: keel cannot tell
// which VG a storage shares, so every VG counts as shared and the removal
// is held with the way forward.
func TestSharedVGsPVEWindow(t *testing.T) {
	h := sharedCfg(t, "sharedcfg-window")
	got := SharedVGs(h)
	if len(got) != len(h.VGs) || len(got) == 0 {
		t.Fatalf("shared %v, want every VG of %d", got, len(h.VGs))
	}
	if s := got["pvesan"]; !s.Unknown || !strings.Contains(s.Why, "/etc/pve is empty") {
		t.Fatalf("pvesan: %+v", s)
	}
	decl := Declared{"pvesan": {"vm-201-disk-0"}}
	_, err := Plan(h, decl, Request{Names: []string{"pvesan/vm-201-disk-0"}, RequireAbsent: true, Known: seen(decl)})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "wait for pve-cluster to mount /etc/pve (systemctl status pve-cluster)") {
		t.Fatalf("got %v", err)
	}
}

// A VG declared shared in the desired state is refused like one LVM or
// Proxmox VE reports shared; undeclared, the same LV is removed.
func TestSharedVGsDeclared(t *testing.T) {
	h := sharedCfg(t, "sharedcfg-declared")
	decl := Declared{"sansh": {"vm-202-disk-0"}}
	req := Request{Names: []string{"sansh/vm-202-disk-0"}, RequireAbsent: true, Known: seen(decl)}
	if targets, err := Plan(h, decl, req); err != nil || len(targets) != 1 {
		t.Fatalf("undeclared: %v, %v", targets, err)
	}
	req.Shared = []string{"sansh"}
	_, err := Plan(h, decl, req)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "the desired state declares it shared") ||
		!strings.Contains(err.Error(), "(there: lvremove sansh/vm-202-disk-0)") {
		t.Fatalf("got %v", err)
	}
}

// storage.cfg read at the configured path: its "shared 1" storage names
// the VG, and the remedy goes through that storage.
func TestSharedVGsConfiguredPath(t *testing.T) {
	s, ok := SharedVGs(sharedCfg(t, "sharedcfg-custom"))["pvecustom"]
	if !ok || s.Storage != "san3" || !strings.Contains(s.Why, "/etc/keel-pve/storage.cfg") {
		t.Fatalf("pvecustom: %+v, %v", s, ok)
	}
	if got := s.WayForward("pvecustom", "vm-203-disk-0"); got != "on the node that owns it: pvesm free san3:vm-203-disk-0; then drop vm-203-disk-0 from the absent list of vg pvecustom" {
		t.Fatalf("way forward %q", got)
	}
}
