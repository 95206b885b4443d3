//go:build e2e

package ownership_test

import (
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// TestSuspendLeft runs suspend.sh: an LV's device suspended by hand stays
// suspended through keel apply, keel check reports it as critical, and the
// remedy keel prints resumes it when typed.
func TestSuspendLeft(t *testing.T) {
	files := shareFiles(t, "suspend.sh")
	r := guest.Run(t, guest.Spec{
		Disks:   []guest.Disk{{Kind: guest.HDD, Size: "256M", Serial: "hdd1"}},
		Keel:    true,
		Files:   files,
		Script:  string(files["suspend.sh"]),
		Timeout: 8 * time.Minute,
	})
	r.LogVerdicts(t)
	// Keep the capture for reconcile/plan/testdata (its desired state
	// goes to testdata/desired/suspend-busy.cue).
	r.KeepCaptures(t, "KEEL_OWNERSHIP_SNAPSHOT_DIR", "suspend", "suspend-busy.txtar", "suspend-busy.cue")
	r.RequireOK(t)
	for _, want := range []string{
		"ok: keel apply left the device the admin suspended suspended (exit ",
		"ok: keel check reports dm.suspended vmdata-vm--100--disk--0 as critical (exit 1) and changes nothing",
		"ok: the remedy keel prints resumes vmdata-vm--100--disk--0 when typed",
	} {
		if !strings.Contains(r.Output, want) {
			t.Errorf("scenario output lacks %q", want)
		}
	}
}
