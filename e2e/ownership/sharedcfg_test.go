//go:build e2e

package ownership_test

import (
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// TestWipeSharedCfg runs sharedcfg.sh in one boot: an absent LV of a VG
// other nodes may use is kept, with its checksum, and keel check says why,
// on a Proxmox VE node whose /etc/pve is not mounted yet (pmxcfs), in a VG
// declared shared, and in a VG that storage.cfg at the configured
// proxmox.storageConfig path shares.
func TestWipeSharedCfg(t *testing.T) {
	files := shareFiles(t, "sharedcfg.sh", "sharedcfg-window.cue", "sharedcfg-declared.cue", "sharedcfg-custom.cue")
	r := guest.Run(t, guest.Spec{
		Disks: []guest.Disk{
			{Kind: guest.HDD, Size: "256M", Serial: "sh1"},
			{Kind: guest.HDD, Size: "256M", Serial: "sh2"},
			{Kind: guest.HDD, Size: "256M", Serial: "sh3"},
		},
		Keel:    true,
		Files:   files,
		Script:  string(files["sharedcfg.sh"]),
		Timeout: 10 * time.Minute,
	})
	r.LogVerdicts(t)
	// Keep the captures for reconcile/plan/testdata/snapshots (the tests
	// of probes, reconcile/plan and reconcile/plan/removal).
	r.KeepCaptures(t, "KEEL_SHAREDCFG_SNAPSHOT_DIR", "sharedcfg",
		"sharedcfg-window.txtar", "sharedcfg-declared.txtar", "sharedcfg-custom.txtar")
	r.RequireOK(t)
	for _, want := range []string{
		"ok: pmxcfs not mounted: pvesan/vm-201-disk-0 kept, checksum intact, keel check says why",
		"ok: declared shared: sansh/vm-202-disk-0 kept, checksum intact, keel check says why",
		"ok: storageConfig honoured: pvecustom/vm-203-disk-0 kept, checksum intact, keel check says why",
	} {
		if !strings.Contains(r.Output, want) {
			t.Errorf("scenario output lacks %q", want)
		}
	}
}
