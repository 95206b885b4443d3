package model

import (
	"strconv"
	"strings"
)

// MDArray is an md (Linux software RAID) array as its sysfs directory
// /sys/block/mdN/md shows it; the files and their values are those of the
// kernel's Documentation/admin-guide/md.rst ("md devices in sysfs").
type MDArray struct {
	// Device is the array's kernel name ("md0", "md127").
	Device string `json:"device"`
	// Level is md/level ("raid1", "raid5", "linear").
	Level string `json:"level"`
	// ArrayState is md/array_state: clear, inactive, suspended, readonly,
	// read-auto, clean, active, write-pending, active-idle, broken.
	ArrayState string `json:"arrayState"`
	// RaidDisks is md/raid_disks: the members the array has when whole.
	RaidDisks int `json:"raidDisks"`
	// Degraded is md/degraded: how many members the array lacks (levels
	// with redundancy only); -1 when the file is absent.
	Degraded int `json:"degraded"`
	// SyncAction is md/sync_action: resync, recover, idle, check, repair,
	// reshape or frozen; "" when the level has none.
	SyncAction string `json:"syncAction,omitempty"`
	// SyncDone and SyncTotal are md/sync_completed ("done / total", in
	// sectors) while a sync runs; both 0 when it reads "none".
	SyncDone  uint64 `json:"syncDone,omitempty"`
	SyncTotal uint64 `json:"syncTotal,omitempty"`
	// MismatchCount is md/mismatch_cnt: the sectors the last check or
	// repair found differing between copies.
	MismatchCount uint64 `json:"mismatchCount"`
	// Members are the devices md/dev-* name, sorted by name.
	Members []MDMember `json:"members"`
	// Errors lists what of the array could not be read.
	Errors []string `json:"errors,omitempty"`
}

// MDMember is one device of an md array (md/dev-XXX).
type MDMember struct {
	// Device is the member's kernel name ("sdb", "nvme0n1p2").
	Device string `json:"device"`
	// State is md/dev-XXX/state, comma-separated: faulty, in_sync,
	// writemostly, blocked, spare, write_error, want_replacement,
	// replacement.
	State string `json:"state"`
}

// Faulty reports whether md marked the member failed ("faulty" in state).
func (m MDMember) Faulty() bool {
	for s := range strings.SplitSeq(m.State, ",") {
		if s == "faulty" {
			return true
		}
	}
	return false
}

// Syncing reports whether the array copies or compares its members now
// (sync_action not idle or frozen).
func (a *MDArray) Syncing() bool {
	switch a.SyncAction {
	case "", "idle", "frozen":
		return false
	}
	return true
}

// SyncRatio is the done part of the running sync, 0 to 1; 1 when none
// runs or its extent is unknown.
func (a *MDArray) SyncRatio() float64 {
	if !a.Syncing() || a.SyncTotal == 0 {
		return 1
	}
	return float64(a.SyncDone) / float64(a.SyncTotal)
}

// Holds reports whether dev, a kernel device name, is the array or one of
// its partitions ("md0", "md0p1").
func (a *MDArray) Holds(dev string) bool {
	rest, ok := strings.CutPrefix(dev, a.Device)
	return ok && (rest == "" || (strings.HasPrefix(rest, "p") && strings.Trim(rest[1:], "0123456789") == "" && len(rest) > 1))
}

// RAID health of an LVM RAID LV, the values of lv_health_status (lvs(8);
// lvm2 lib/report/report.c, _lvhealthstatus_disp): a RAID LV on a missing
// PV is "partial", one whose kernel table has a failed leg LVM's metadata
// still lists is "refresh needed", one whose last scrub found differing
// copies "mismatches exist".
const (
	HealthPartial       = "partial"
	HealthRefreshNeeded = "refresh needed"
	HealthMismatches    = "mismatches exist"
)

// IsRAID reports whether lv is an LVM RAID LV (a top-level one: raid1,
// raid4/5/6, raid10; segment type raid*, lvmraid(7)), not one of its
// hidden images or metadata LVs.
func (lv *LV) IsRAID() bool {
	if lv.Hidden {
		return false
	}
	for _, s := range lv.Segments {
		if strings.HasPrefix(s.Type, "raid") {
			return true
		}
	}
	return false
}

// HealthStatus is the LV's lv_health_status ("" when healthy or not
// reported).
func (lv *LV) HealthStatus() string { return lv.Fields.Get("lv_health_status") }

// SyncPercent is the LV's sync_percent, the part of a RAID LV's images in
// sync, or -1 when LVM did not report it (inactive, or not RAID).
func (lv *LV) SyncPercent() float64 { return percentField(lv.Fields.Get("sync_percent")) }

// RaidSyncAction is the LV's raid_sync_action: idle, frozen, resync,
// recover, check, repair or reshape (the kernel's, lvmraid(7)).
func (lv *LV) RaidSyncAction() string { return lv.Fields.Get("raid_sync_action") }

// RaidMismatchCount is the LV's raid_mismatch_count, the mismatches the
// last check or repair found; 0 when not reported.
func (lv *LV) RaidMismatchCount() uint64 {
	return uintOf(lv.Fields.Get("raid_mismatch_count"))
}

// percentField parses an LVM percentage; "" and malformed values give -1.
func percentField(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if s == "" || err != nil {
		return -1
	}
	return v
}

// uintOf parses a decimal; "" and malformed values give 0.
func uintOf(s string) uint64 {
	n, _ := strconv.ParseUint(s, 10, 64)
	return n
}
