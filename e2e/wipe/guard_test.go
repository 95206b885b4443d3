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

// TestWipeGuards runs guard.sh in one boot: a VG that Proxmox shares is
// refused, an LV opened with plain O_RDWR after the probe is refused before
// the first write, a zero-fill that would allocate in a thin pool below is
// refused, the removal of a thin LV whose pool does not zero is held until
// the printed remedy is typed, and thin LVs removed through absent lower
// their pools' data use; a Proxmox VE 9 qcow2 volume chain is removed
// whole or not at all.
func TestWipeGuards(t *testing.T) {
	files := map[string][]byte{}
	for _, f := range []string{"guard.cue", "thin.cue"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		files[f] = b
	}
	files["wipelib.sh"] = lib(t)
	script, err := os.ReadFile("guard.sh")
	if err != nil {
		t.Fatal(err)
	}
	r := guest.Run(t, guest.Spec{
		Disks: []guest.Disk{{Kind: guest.NVMe, Size: "8G", Serial: "nvme0"},
			{Kind: guest.HDD, Size: "1G", Serial: "hdd1"}},
		Keel:    true,
		Files:   files,
		Script:  string(script),
		Timeout: 20 * time.Minute,
	})
	t.Logf("guest wall time %s", r.Wall)
	for _, line := range strings.Split(r.Output, "\n") {
		if strings.HasPrefix(line, "ok: ") || strings.HasPrefix(line, "FAIL: ") || strings.Contains(line, " data: ") {
			t.Log(line)
		}
	}
	if dir := os.Getenv("KEEL_WIPE_SNAPSHOT_DIR"); dir != "" {
		// Keep the setup capture for reconcile/apply/wipe/testdata, and the guest's
		// whole output next to it, before any verdict.
		b, err := r.File("guard/node-guard.txtar")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "node-guard.txtar"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "guard-output.txt"), []byte(r.Output), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.RequireOK(t)
	// Every check prints an ok: line; a scenario that skipped some cannot pass.
	if n := strings.Count(r.Output, "\nok: "); n < 17 {
		t.Errorf("only %d ok: lines, want 17", n)
	}
}
