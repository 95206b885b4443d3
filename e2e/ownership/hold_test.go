//go:build e2e

package ownership_test

import (
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// TestHoldDrain runs hold.sh: an operator's hold on bcache0 keeps a
// writethrough drain through keel apply and a "change" uevent of the
// device (keel's udev rule), is shown by keel check and keel status, and
// keel release hands the device back to keel.
func TestHoldDrain(t *testing.T) {
	files := shareFiles(t, "hold.sh", "../scenarios/stacks.sh")
	r := guest.Run(t, guest.Spec{
		Disks: []guest.Disk{
			{Kind: guest.SSD, Size: "256M", Serial: "ssd1"},
			{Kind: guest.HDD, Size: "256M", Serial: "hdd1"},
		},
		Keel:    true,
		Files:   files,
		Script:  string(files["hold.sh"]),
		Timeout: 8 * time.Minute,
	})
	r.LogVerdicts(t)
	r.RequireOK(t)
	for _, want := range []string{
		"ok: keel hold bcache0 recorded the hold",
		"ok: keel apply and a change uevent left the held bcache0 in writethrough",
		"ok: keel check shows the hold on bcache0 with its reason",
		"ok: keel status shows the hold",
		"ok: after keel release bcache0, keel apply writes writeback again",
		"ok: a change uevent does not make keel's udev rule write the tunables",
		"ok: at a registration keel's udev rule writes the tunables (sequential_cutoff 0.0k, writeback)",
	} {
		if !strings.Contains(r.Output, want) {
			t.Errorf("scenario output lacks %q", want)
		}
	}
}
