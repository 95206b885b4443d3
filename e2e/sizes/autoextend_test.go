//go:build e2e

package sizes

import (
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// TestAutoextend runs autoextend.sh in one boot on one small virtio disk:
// a thin pool declared with an autoextend policy gets keel's LVM profile
// (shown by keel plan first), dmeventd grows it twice as dd fills it past
// its threshold, and keel turns autoextend off at the declared maximum,
// where it stays however full the pool gets. Set
// KEEL_SIZES_SNAPSHOT_DIR=DIR to keep the node snapshots taken before keel
// acts and at the maximum (reconcile/plan/testdata).
func TestAutoextend(t *testing.T) {
	r := guest.Run(t, guest.Spec{
		Disks:   []guest.Disk{{Kind: guest.Virtio, Size: "512M", Serial: "data1"}},
		Keel:    true,
		Files:   guest.ShareFiles(t, "autoextend.cue", "../wipe/wipelib.sh"),
		Script:  string(guest.ShareFiles(t, "autoextend.sh")["autoextend.sh"]),
		Timeout: 15 * time.Minute,
	})
	r.LogVerdicts(t)
	r.KeepCaptures(t, "KEEL_SIZES_SNAPSHOT_DIR", "sizes", "autoextend-before.txtar", "autoextend-max.txtar")
	r.RequireLines(t,
		"ok: check: keel check reports autoextend.policy",
		"ok: plan: keel plan shows the profile written and attached",
		"ok: apply: profile keel-autovg-tp-t70-p50 written and attached",
		"ok: apply: dmeventd monitors tp",
		"ok: grow: dmeventd grew tp past 70% from 32M to 48M",
		"ok: grow: dmeventd grew tp again to 72M",
		"ok: ceiling: keel attached keel-autovg-tp-off at 72M",
		"ok: ceiling: keel check reports autoextend.at_maximum",
		"ok: ceiling: tp stayed at its maximum 72M",
	)
}
