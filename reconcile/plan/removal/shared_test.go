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
