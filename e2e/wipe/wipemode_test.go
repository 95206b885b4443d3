//go:build e2e

package wipe_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// TestWipeMode runs wipemode.sh in one boot: an absent LV on the plain SSD
// of a VG stacked on VDO is zeroed, not only discarded (a new LV on the same
// extents reads zeroes), and the removal of a thin LV whose pool does not
// zero is held until the printed remedy is typed.
func TestWipeMode(t *testing.T) {
	r := guest.Run(t, guest.Spec{
		Disks: []guest.Disk{{Kind: guest.NVMe, Size: "4G", Serial: "nvme0"},
			{Kind: guest.TrimKeep, Size: "256M", Serial: "ssd1"},
			{Kind: guest.HDD, Size: "256M", Serial: "hdd2"}},
		Keel:    true,
		Files:   shareFiles(t, "wipemode.cue"),
		Script:  string(readFile(t, "wipemode.sh")),
		Timeout: 15 * time.Minute,
	})
	logVerdicts(t, r)
	// The setup capture, for reconcile/apply/wipe/testdata (the wipe-mode
	// tests of reconcile/plan/removal).
	keepCaptures(t, r, "wipemode/node-wipemode.txtar")
	r.RequireOK(t)
	for _, want := range []string{
		"ok: a: keel apply removed vms/vm-100-disk-0",
		"ok: a: new vms/vm-101-disk-0 on the same extents reads zeroes",
		"ok: b: keel check reports lv.absent_unzeroed_pool tvg/vm-103-disk-0",
		"ok: b: keel apply held tvg/vm-103-disk-0 (pool tvg/pooln does not zero)",
		"ok: b: remedy 'lvchange -Z y tvg/pooln' works as typed",
		"ok: b: the next keel apply removed tvg/vm-103-disk-0",
	} {
		if !strings.Contains(r.Output, want) {
			t.Errorf("scenario output lacks %q", want)
		}
	}
}

// readFile reads a file of this package's directory.
func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// shareFiles is what a scenario finds in the share: wipelib.sh and the
// named files of this directory.
func shareFiles(t *testing.T, names ...string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{"wipelib.sh": lib(t)}
	for _, n := range names {
		files[n] = readFile(t, n)
	}
	return files
}

// logVerdicts logs the guest's wall time and every ok:/FAIL: line.
func logVerdicts(t *testing.T, r *guest.Result) {
	t.Helper()
	t.Logf("guest wall time %s", r.Wall)
	for _, line := range strings.Split(r.Output, "\n") {
		if strings.HasPrefix(line, "ok: ") || strings.HasPrefix(line, "FAIL: ") {
			t.Log(line)
		}
	}
}

// keepCaptures copies the named files of the guest's out/ directory to
// $KEEL_WIPE_SNAPSHOT_DIR when it is set, before any verdict.
func keepCaptures(t *testing.T, r *guest.Result, names ...string) {
	t.Helper()
	dir := os.Getenv("KEEL_WIPE_SNAPSHOT_DIR")
	if dir == "" {
		return
	}
	for _, name := range names {
		b, err := r.File(name)
		if err != nil {
			t.Error(err)
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(name)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
