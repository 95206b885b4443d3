//go:build e2e

package ownership_test

import (
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// TestSharedVGGate runs sharedgate.sh in one boot: on a VG declared shared,
// keel check reports the thin pool to change and the one to create as
// vg.shared_change, keel apply leaves the VG's metadata seqno and LVs as
// they were, and the printed remedies, typed on the node that owns the VG
// (played by the guest), make the changes.
func TestSharedVGGate(t *testing.T) {
	files := shareFiles(t, "sharedgate.sh", "sharedgate.cue")
	r := guest.Run(t, guest.Spec{
		Disks:   []guest.Disk{{Kind: guest.HDD, Size: "512M", Serial: "gate1"}},
		Keel:    true,
		Files:   files,
		Script:  string(files["sharedgate.sh"]),
		Timeout: 8 * time.Minute,
	})
	r.LogVerdicts(t)
	r.RequireLines(t,
		"ok: keel check reports vg.shared_change sanvg/tp (rc 1)",
		"ok: keel check reports vg.shared_change sanvg/tpnew (rc 1)",
		"ok: keel apply changed nothing in shared sanvg (seqno ",
		"ok: the owning node's remedy for sanvg/tp runs as printed: lvchange -Z n sanvg/tp",
		"ok: the owning node's remedy for sanvg/tpnew runs as printed: lvcreate ",
		"ok: after the owning node's changes keel check reports no drift in sanvg",
	)
}
