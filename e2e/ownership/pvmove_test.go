//go:build e2e

package ownership_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// TestPvmoveOwnership runs pvmove.sh in one boot: keel's own pvmove of a
// split VDO pool's journal, slowed by a dm-delay table under the fast PV,
// outlives keel apply's per-command timeout and finishes, never killed,
// recorded in keel's state while it runs; an admin's pvmove, in progress
// and then interrupted, is reported and never resumed.
func TestPvmoveOwnership(t *testing.T) {
	files := shareFiles(t, "pvmove.sh")
	if os.Getenv("KEEL_PVMOVE_SNAPSHOT_DIR") != "" {
		files["pvmove-capture"] = nil // the scenario then takes its snapshots
	}
	r := guest.Run(t, guest.Spec{
		Disks: []guest.Disk{{Kind: guest.NVMe, Size: "6G", Serial: "nvme0"},
			{Kind: guest.HDD, Size: "6G", Serial: "hdd1"}},
		Keel:    true,
		Files:   files,
		Script:  string(files["pvmove.sh"]),
		Timeout: 15 * time.Minute,
	})
	r.LogVerdicts(t)
	// Keep the captures for reconcile/plan/testdata (the admin's move in
	// progress and interrupted, as keel snapshot recorded them).
	r.KeepCaptures(t, "KEEL_PVMOVE_SNAPSHOT_DIR", "pvmove",
		"node-pvmove-in-progress.txtar", "node-pvmove-interrupted.txtar", "pvmove.cue")
	r.RequireOK(t)
	for _, want := range []string{
		"ok: keel's pvmove of the split pool's journal outlived keel apply --timeout 10s and finished, never killed",
		"ok: keel's state named its pvmove while it ran and forgot it once done",
		"ok: keel check reports the admin's pvmove as in progress",
		"ok: keel apply runs no pvmove on the admin's move (in progress)",
		"ok: keel check reports the admin's pvmove as interrupted",
		"ok: keel apply runs no pvmove on the admin's move (interrupted)",
		"ok: the admin's interrupted pvmove is left as it was",
	} {
		if !strings.Contains(r.Output, want) {
			t.Errorf("scenario output lacks %q", want)
		}
	}
}
