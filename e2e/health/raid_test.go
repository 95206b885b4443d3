//go:build e2e

package health

import (
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// TestRaid runs raid.sh in one boot: an md raid1 under a declared PV with a
// failed member is raid.degraded (an error) and its remedy brings the
// member back; an LVM raid1 LV with a leg's disk gone is raid.degraded, with
// the disk back raid.refresh_needed, and each remedy, typed as printed,
// heals it (lvchange --refresh, lvconvert --repair onto the spare PV).
func TestRaid(t *testing.T) {
	disks := []guest.Disk{}
	for _, s := range []string{"mda", "mdb", "ra", "rb", "rc"} {
		disks = append(disks, guest.Disk{Kind: guest.HDD, Size: "128M", Serial: s})
	}
	r := guest.Run(t, guest.Spec{
		Disks:   disks,
		Keel:    true,
		Files:   guest.ShareFiles(t, "raid.cue", "../wipe/wipelib.sh"),
		Script:  string(guest.ShareFiles(t, "raid.sh")["raid.sh"]),
		Timeout: 15 * time.Minute,
	})
	r.LogVerdicts(t)
	// Keep the captures for reconcile/plan/testdata/snapshots (the RAID
	// planner tests, plan_raid_test.go, replay them).
	r.KeepCaptures(t, "KEEL_RAID_SNAPSHOT_DIR", "raid",
		"raid-md-clean.txtar", "raid-md-degraded.txtar", "raid-md-recovering.txtar",
		"raid-lvmraid-clean.txtar", "raid-lvmraid-partial.txtar", "raid-lvmraid-refresh.txtar")
	r.RequireLines(t,
		"ok: md0 in sync: keel check reports no raid finding",
		"ok: md0 with a failed member: keel check reports raid.degraded /dev/md0 (rc 1)",
		"ok: md0 recovering onto the returned member: keel check reports raid.resyncing /dev/md0 (rc 1)",
		"' typed as printed: md0 whole again, raid.degraded gone",
		"ok: raidvg/r1 in sync: keel check reports no raid finding",
		"ok: raidvg/r1 with its leg's disk gone: keel check reports raid.degraded raidvg/r1 (rc 1)",
		"ok: raidvg/r1 with its leg's disk back: keel check reports raid.refresh_needed raidvg/r1 (rc 1)",
		"ok: remedy 'lvchange --refresh raidvg/r1' typed as printed: raidvg/r1 healthy again",
		"ok: remedy 'lvconvert --repair raidvg/r1' typed as printed: the failed leg rebuilt on rc",
	)
}
