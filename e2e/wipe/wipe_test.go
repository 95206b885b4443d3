//go:build e2e

// Package wipe_test runs the safe-removal scenario (scenario.sh) in one
// boot of the test guest: every refusal changes nothing, a discard on a VG
// stacked on VDO returns VDO's blocks, a discard of a thin LV returns the
// pool's, and a wipe killed midway is finished by the next run.
package wipe_test

import (
	"os"
	"path/filepath"
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
	logVerdicts(t, r)
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

// keepCaptures copies the files a scenario left in its output directory
// (sub, under the share's out/) into the directory the environment
// variable env names, for the host tests' testdata; nothing without it.
func keepCaptures(t *testing.T, r *guest.Result, env, sub string, names ...string) {
	t.Helper()
	dir := os.Getenv(env)
	if dir == "" {
		return
	}
	for _, name := range names {
		b, err := r.File(sub + "/" + name)
		if err != nil {
			t.Error(err)
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// shareFiles reads the named files of this directory, with wipelib.sh, for
// a scenario's share.
func shareFiles(t *testing.T, names ...string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{"wipelib.sh": lib(t)}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		files[n] = b
	}
	return files
}

// logVerdicts logs the guest's wall time and the scenario's ok: and FAIL:
// lines.
func logVerdicts(t *testing.T, r *guest.Result) {
	t.Helper()
	t.Logf("guest wall time %s", r.Wall)
	for _, line := range strings.Split(r.Output, "\n") {
		if strings.HasPrefix(line, "ok: ") || strings.HasPrefix(line, "FAIL: ") {
			t.Log(line)
		}
	}
}

// requireLines fails the test unless the scenario exited 0 and printed each
// of want.
func requireLines(t *testing.T, r *guest.Result, want ...string) {
	t.Helper()
	// The scenario exits with its number of failures; each must-pass step
	// prints an "ok:" line, so a scenario that stopped early cannot pass.
	r.RequireOK(t)
	for _, w := range want {
		if !strings.Contains(r.Output, w) {
			t.Errorf("scenario output lacks %q", w)
		}
	}
}
