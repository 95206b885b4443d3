//go:build e2e

// Package wipe_test runs the safe-removal scenario (scenario.sh) in one
// boot of the test guest: every refusal changes nothing, a discard on a VG
// stacked on VDO returns VDO's blocks, a discard of a thin LV returns the
// pool's, and a wipe killed midway is finished by the next run.
package wipe_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

func TestWipeScenario(t *testing.T) {
	script, err := os.ReadFile("scenario.sh")
	if err != nil {
		t.Fatal(err)
	}
	cue, err := os.ReadFile("wipe.cue")
	if err != nil {
		t.Fatal(err)
	}
	r := guest.Run(t, guest.Spec{
		Disks: []guest.Disk{{Kind: guest.NVMe, Size: "20G", Serial: "nvme0"},
			{Kind: guest.HDD, Size: "4G", Serial: "hdd1"}},
		Keel:    true,
		Files:   map[string][]byte{"wipelib.sh": lib(t), "wipe.cue": cue},
		Script:  string(script),
		Timeout: 20 * time.Minute,
	})
	r.LogVerdicts(t)
	// The scenario exits with its number of failures; each must-pass step
	// prints an "ok:" line, so a scenario that ran nothing cannot pass.
	r.RequireOK(t)
	for _, want := range []string{"ok: resumed: vms/del-big finished and removed"} {
		if !strings.Contains(r.Output, want) {
			t.Errorf("scenario output lacks %q", want)
		}
	}
	if n := strings.Count(r.Output, "\nok: "); n < 10 {
		t.Errorf("only %d ok: lines; the scenario checks every refusal and three removals", n)
	}
}

// lib returns wipelib.sh (the harness has its own lib.sh in the share), the helpers every scenario of this package sources
// from the share.
func lib(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("wipelib.sh")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// shareFiles reads the named files of this directory, with wipelib.sh, for
// a scenario's share.
func shareFiles(t *testing.T, names ...string) map[string][]byte {
	t.Helper()
	return guest.ShareFiles(t, append([]string{"wipelib.sh"}, names...)...)
}
