//go:build e2e

package health_test

import (
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// TestLockd runs lockd.sh in one boot: an active Proxmox VE thin snapshot
// that the VM-disk reject of keel's examples leaves to LVM, reported by
// keel check --audit and hidden by the reject that matches snap_; a VG shared through lvmlockd with
// sanlock, whose lock type and started lockspace keel status shows; a
// Proxmox VE disk on it with autoactivation on (lv.shared_autoactivation),
// its lockspace stopped (vg.lockstart_missing) and lvmlockd quit
// (vg.lvmlockd_missing) are each reported by keel check, and the first two
// remedies, typed as printed, clear them.
func TestLockd(t *testing.T) {
	files := guest.ShareFiles(t, "../wipe/wipelib.sh", "lockd.sh", "lockd.cue")
	r := guest.Run(t, guest.Spec{
		Disks: []guest.Disk{
			{Kind: guest.HDD, Size: "256M", Serial: "snap1"},
			{Kind: guest.HDD, Size: "1G", Serial: "lock1"},
		},
		Keel:    true,
		Files:   files,
		Script:  string(files["lockd.sh"]),
		Timeout: 10 * time.Minute,
	})
	r.LogVerdicts(t)
	// Keep the captures for probes/testdata/snapshots (the tests of the
	// lvmlockd probe and of the planner's lvmlockd rules).
	r.KeepCaptures(t, "KEEL_LOCKD_SNAPSHOT_DIR", "lockd",
		"filter-thinsnap.txtar", "lockd-started.txtar", "lockd-stopped.txtar", "lockd-nodaemon.txtar")
	r.RequireLines(t,
		"ok: LVM sees the guest's PV on the active thin snapshot /dev/mapper/pvethin-snap_vm--100--disk--0_snap1 through the VM-disk reject",
		"ok: keel check --audit reports lvm.global_filter naming pvethin/snap_vm-100-disk-0_snap1",
		"ok: the reject /dev/mapper/.*-(snap_)?(vm|base)--[0-9]+--disk--[0-9]+ hides the snapshot from LVM (pvs lists no PV on it)",
		"ok: keel status shows lockvg's lock type sanlock and its lockspace started",
		"ok: keel check reports lv.shared_autoactivation lockvg/vm-100-disk-0 after lvcreate with autoactivation on",
		"ok: remedy 'lvchange --setautoactivation n lockvg/vm-100-disk-0' runs as printed and lv.shared_autoactivation lockvg/vm-100-disk-0 is gone",
		"ok: keel check reports vg.lockstart_missing lockvg after vgchange --lockstop",
		"ok: remedy 'vgchange --lockstart lockvg' runs as printed and vg.lockstart_missing lockvg is gone",
		"ok: keel check reports vg.lvmlockd_missing lockvg after lvmlockd quit",
	)
}
