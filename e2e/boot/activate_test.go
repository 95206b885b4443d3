//go:build e2e

package boot

import (
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// TestActivateLVMRules runs activate.sh in one boot of the fast guest: keel
// activate follows lvm2's autoactivation rules (activation-skip, VG and LV
// autoactivation, auto_activation_volume_list), waits for an activation
// command slower than a minute without killing it, and falls back to the
// last good desired state when the one on disk is invalid.
//
// KEEL_ACTIVATE_SNAPSHOT_DIR, when set, receives the node captured after
// lvm2's own autoactivation (reconcile/activation/testdata).
func TestActivateLVMRules(t *testing.T) {
	files := guest.ShareFiles(t, "activate.sh", "../wipe/wipelib.sh")
	r := guest.Run(t, guest.Spec{
		Disks: []guest.Disk{
			{Kind: guest.HDD, Size: "1G", Serial: "hdd1"},
			{Kind: guest.HDD, Size: "1G", Serial: "hdd2"},
			{Kind: guest.HDD, Size: "1G", Serial: "hdd3"},
		},
		Keel:    true,
		Files:   files,
		Script:  string(files["activate.sh"]),
		Timeout: 15 * time.Minute,
	})
	r.LogVerdicts(t, "keel activate")
	r.KeepCaptures(t, "KEEL_ACTIVATE_SNAPSHOT_DIR", "activate", "node-autoactivation.txtar")
	r.RequireLines(t,
		"ok: lvm fullreport --readonly did not wait on the VG's lock; without --readonly it did",
		"ok: keel activate returned at once (exit 0) with the LVs lvm2 does not autoactivate inactive",
		"ok: keel activate left the snapshot, the template, offvg and listvg/out inactive, as lvm2 does",
		"ok: keel activate waited for the slow vgchange without killing it; pve/vm-100-disk-0 active",
		"ok: keel activate said it passed its bound while the command ran",
		"ok: an invalid desired state: keel activate used the last good one and said so",
		"ok: an invalid desired state and never a good one: keel activate exits 2",
	)
}
