//go:build e2e

package sizes

import (
	"testing"

	"github.com/keel-storage/keel/e2e/guest"
)

// autoextendDisk is the disk of autoextend.sh, which runs in TestGrow's
// boot after grow.sh (a boot costs about a minute under TCG): a thin pool
// declared with an autoextend policy gets keel's LVM profile (shown by
// keel plan first), dmeventd grows it twice as dd fills it past its
// threshold, and keel turns autoextend off at the declared maximum, where
// it stays however full the pool gets.
var autoextendDisk = guest.Disk{Kind: guest.Virtio, Size: "256M", Serial: "auto1"}

// autoextendLines are the lines autoextend.sh prints when it passes.
var autoextendLines = []string{
	"ok: check: keel check reports autoextend.policy",
	"ok: plan: keel plan shows the profile written and attached",
	"ok: apply: profile keel-autovg-tp-t70-p50 written and attached",
	"ok: apply: dmeventd monitors tp",
	"ok: grow: dmeventd grew tp past 70% from 32M to 48M",
	"ok: grow: dmeventd grew tp again to 72M",
	"ok: ceiling: keel attached keel-autovg-tp-off at 72M",
	"ok: profiles: keel apply removed the superseded keel-autovg-tp-t70-p50 and kept the operator's",
	"ok: ceiling: keel check reports autoextend.at_maximum",
	"ok: ceiling: tp stayed at its maximum 72M",
}

// keepAutoextendCaptures copies the node snapshots autoextend.sh takes
// before keel acts, at the maximum and once the -off profile is attached
// into KEEL_SIZES_SNAPSHOT_DIR, when set (reconcile/plan/testdata/snapshots:
// sizes-autoextend, sizes-autoextend-max and sizes-autoextend-off), and
// those of vdosplit.sh and vdoauto.sh.
func keepAutoextendCaptures(t *testing.T, r *guest.Result) {
	r.KeepCaptures(t, "KEEL_SIZES_SNAPSHOT_DIR", "sizes", "autoextend-before.txtar", "autoextend-max.txtar",
		"autoextend-off.txtar", "vdosplit-before.txtar", "vdoauto-max.txtar")
}
