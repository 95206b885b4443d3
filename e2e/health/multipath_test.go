//go:build e2e

package health

import (
	"os"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// snapshotEnv names the directory that keeps the scenario's node
// snapshots, the fixtures of reconcile/plan/testdata/snapshots.
const snapshotEnv = "KEEL_MULTIPATH_SNAPSHOT_DIR"

// TestMultipath runs multipath.sh in one boot: a declared VG on a
// device-mapper multipath map of two paths to one disk; a failed path is
// pv.multipath_degraded, no path left pv.multipath_no_path (critical), a
// VG declared on one path instead of the map is pv.multipath_component,
// and keel plan proposes nothing on the path.
func TestMultipath(t *testing.T) {
	files := guest.ShareFiles(t, "mpmap.cue", "mppath.cue", "../wipe/wipelib.sh")
	if os.Getenv(snapshotEnv) != "" {
		files["capture"] = nil // the script takes node snapshots only then
	}
	r := guest.Run(t, guest.Spec{
		Disks:   []guest.Disk{{Kind: guest.HDD, Size: "256M", Serial: "mp1"}},
		Keel:    true,
		Files:   files,
		Script:  string(guest.ShareFiles(t, "multipath.sh")["multipath.sh"]),
		Timeout: 10 * time.Minute,
	})
	r.LogVerdicts(t, "scenario time")
	// Keep the node snapshots for reconcile/plan/testdata/snapshots: the
	// host tests of the probe's multipath model and of the findings.
	r.KeepCaptures(t, snapshotEnv, "multipath",
		"multipath-healthy.txtar", "multipath-degraded.txtar", "multipath-nopath.txtar")
	r.RequireLines(t,
		"ok: one path of mpkeel failed: pv.multipath_degraded names loop0",
		"ok: remedy 'dmsetup status mpkeel' runs as printed",
		"ok: no active path left in mpkeel: pv.multipath_no_path is critical",
		"ok: remedy 'dmsetup message mpkeel 0 reinstate_path' typed as printed brought both paths back",
		"ok: the VG declared on path /dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_mp1: pv.multipath_component names /dev/mapper/mpkeel",
		"ok: keel plan proposes nothing on the path /dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_mp1 of mpkeel",
	)
}
