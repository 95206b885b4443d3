//go:build e2e

package ownership_test

import (
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// TestForeignVG runs foreignvg.sh in one boot: a VG named as the declared
// one but on another disk (vg.foreign), and the declared VG made anew on its
// own disk (vg.uuid_changed), each keep an LV the desired state lists as
// absent with its data, and get no thin pool; each printed remedy works as
// typed. KEEL_FOREIGNVG_SNAPSHOT_DIR keeps the captures for
// reconcile/apply/wipe/testdata (the host tests of both findings).
func TestForeignVG(t *testing.T) {
	files := shareFiles(t, "foreignvg.sh", "foreignvg.cue")
	r := guest.Run(t, guest.Spec{
		Disks: []guest.Disk{
			{Kind: guest.HDD, Size: "1G", Serial: "vgida"},
			{Kind: guest.HDD, Size: "1G", Serial: "vgidb"},
		},
		Keel:    true,
		Files:   files,
		Script:  string(files["foreignvg.sh"]),
		Timeout: 10 * time.Minute,
	})
	r.LogVerdicts(t)
	r.KeepCaptures(t, "KEEL_FOREIGNVG_SNAPSHOT_DIR", "foreignvg", "node-foreign.txtar", "node-uuid.txtar", "state-uuid.json")
	r.RequireLines(t,
		"ok: foreign: keel check reports vg.foreign vmdata (rc 1)",
		"ok: foreign: keel apply kept vmdata/vm-101-disk-0 (checksum intact), created nothing",
		"ok: foreign: remedy 'vgrename ",
		"ok: uuid: keel check recorded vmdata's vg_uuid",
		"ok: uuid: keel check reports vg.uuid_changed vmdata (rc 1)",
		"ok: uuid: keel apply kept vmdata/vm-101-disk-0 (checksum intact), created nothing",
		"ok: uuid: remedy 'keel ack-vg vmdata",
	)
}
