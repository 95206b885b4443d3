//go:build e2e

package wipe_test

import (
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// TestWipeMode runs wipemode.sh in one boot: an absent LV on the plain SSD
// of a VG stacked on VDO is zeroed, not only discarded (a new LV on the same
// extents reads zeroes), and the removal of a thin LV whose pool does not
// zero is held until the printed remedy is typed.
func TestWipeMode(t *testing.T) {
	files := shareFiles(t, "wipemode.cue", "wipemode.sh")
	r := guest.Run(t, guest.Spec{
		Disks: []guest.Disk{{Kind: guest.NVMe, Size: "4G", Serial: "nvme0"},
			{Kind: guest.TrimKeep, Size: "256M", Serial: "ssd1"},
			{Kind: guest.HDD, Size: "256M", Serial: "hdd2"}},
		Keel:    true,
		Files:   files,
		Script:  string(files["wipemode.sh"]),
		Timeout: 15 * time.Minute,
	})
	r.LogVerdicts(t)
	// The setup capture, for reconcile/apply/wipe/testdata (the wipe-mode
	// tests of reconcile/plan/removal).
	r.KeepCaptures(t, "KEEL_WIPE_SNAPSHOT_DIR", "wipemode", "node-wipemode.txtar")
	r.RequireLines(t,
		"ok: a: keel apply removed vms/vm-100-disk-0",
		"ok: a: new vms/vm-101-disk-0 on the same extents reads zeroes",
		"ok: b: keel check reports lv.absent_unzeroed_pool tvg/vm-103-disk-0",
		"ok: b: keel apply held tvg/vm-103-disk-0 (pool tvg/pooln does not zero)",
		"ok: b: remedy 'lvchange -Z y tvg/pooln' works as typed",
		"ok: b: the next keel apply removed tvg/vm-103-disk-0",
	)
}
