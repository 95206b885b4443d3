//go:build e2e

// Package watchdog proves, in the systemd flavour of the test guest, that a
// safe removal longer than keel.service's WatchdogSec finishes, and that a
// removal killed midway resumes from keel's last checkpoint after systemd
// restarts keel (watchdog.sh).
package watchdog

import (
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

func TestLongWipeUnderWatchdog(t *testing.T) {
	read := func(rel string) []byte { return guest.RepoFile(t, rel) }
	debBytes := guest.Deb(t)
	m := guest.New(t, guest.Spec{
		Flavour: guest.Systemd,
		Disks:   []guest.Disk{{Kind: guest.HDD, Size: "4G", Serial: "hdd1"}},
		Files: map[string][]byte{
			"keel.deb":  debBytes,
			"stacks.sh": read("e2e/scenarios/stacks.sh"),
		},
		Mem:     "2G",
		Timeout: 20 * time.Minute,
	})
	r := m.Boot(t, string(read("e2e/watchdog/watchdog.sh")))
	passes := r.Verdicts(t, "wipe_seconds=")
	if r.ExitCode != 0 || passes != wantPass {
		t.Errorf("scenario exit %d with %d PASS lines (want 0 and %d)", r.ExitCode, passes, wantPass)
	}
}

// wantPass is the number of PASS lines watchdog.sh prints.
const wantPass = 10
