//go:build e2e

package ownership_test

import (
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// TestWipeRollout runs rollout.sh in one boot: the audit-first rollout
// records the first sight of an absent name in every mode that reads the
// desired state, so a new LV under a reused VM id, made during the audit
// week, is kept at the switch to converge; a state keel cannot write is
// said and removes nothing unrecorded; absent entries that pin an lv_uuid
// remove only the LV of that uuid.
func TestWipeRollout(t *testing.T) {
	files := shareFiles(t, "rollout.sh")
	r := guest.Run(t, guest.Spec{
		Disks:   []guest.Disk{{Kind: guest.HDD, Size: "1G", Serial: "hdd1"}},
		Keel:    true,
		Files:   files,
		Script:  string(files["rollout.sh"]),
		Timeout: 10 * time.Minute,
	})
	r.LogVerdicts(t)
	r.RequireOK(t)
	for _, want := range []string{
		"ok: keel check with a read-only /var/lib/keel exits 1 (not 2) and reports state.unrecorded",
		"ok: keel apply with a read-only /var/lib/keel removes nothing under the unrecorded name",
		"ok: keel check recorded the first sight of vmdata/vm-105-disk-0",
		"ok: keel plan recorded the first sight of vmdata/vm-105-disk-0",
		"ok: keel apply --dry-run recorded the first sight of vmdata/vm-105-disk-0",
		"ok: keel run (agent mode audit) recorded the first sight of vmdata/vm-105-disk-0",
		"ok: keel check and keel plan print the uuid of the LV under vmdata/vm-105-disk-0",
		"ok: the audit week changed nothing (LV list and checksum)",
		"ok: vmdata/vm-105-disk-0 (a reused VM id, new) kept at the switch to converge, checksum intact, lv.absent_reappeared reported",
		"ok: keel plan prints the uuid of each LV under a pinned absent name",
		"ok: pinned vmdata/vm-105-disk-0 removed (the LV of the pinned uuid)",
		"ok: vmdata/vm-106-disk-0 of another uuid kept under its pinned entry, checksum intact, lv.absent_reappeared reported",
	} {
		if !strings.Contains(r.Output, want) {
			t.Errorf("scenario output lacks %q", want)
		}
	}
}
