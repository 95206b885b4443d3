//go:build e2e

package wipe_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// TestWipeReuse runs reuse.sh in one boot: a reused name after removal is
// kept with its data and reported (lv.absent_reappeared) by a new keel
// process, dependents (a PV label LVM does not list, a snapshot origin, a
// thin external origin) are refused with nothing changed, and keel wipe
// refuses a desired state others can write; a removal that failed on EIO is
// not run again by a new process and its printed remedy finishes it.
func TestWipeReuse(t *testing.T) {
	script, err := os.ReadFile("reuse.sh")
	if err != nil {
		t.Fatal(err)
	}
	cue, err := os.ReadFile("reuse.cue")
	if err != nil {
		t.Fatal(err)
	}
	failed, err := os.ReadFile("failed.cue")
	if err != nil {
		t.Fatal(err)
	}
	r := guest.Run(t, guest.Spec{
		Disks:   []guest.Disk{{Kind: guest.HDD, Size: "4G", Serial: "hdd1"}},
		Keel:    true,
		Files:   map[string][]byte{"wipelib.sh": lib(t), "reuse.cue": cue, "failed.cue": failed},
		Script:  string(script),
		Timeout: 15 * time.Minute,
	})
	t.Logf("guest wall time %s", r.Wall)
	for _, line := range strings.Split(r.Output, "\n") {
		if strings.HasPrefix(line, "ok: ") || strings.HasPrefix(line, "FAIL: ") {
			t.Log(line)
		}
	}
	// Keep the captures for reconcile/apply/wipe/testdata (the dependents
	// tests of reconcile/plan/removal, the content tests of wipe).
	r.KeepCaptures(t, "KEEL_WIPE_SNAPSHOT_DIR", "reuse",
		"node-deps.txtar", "blkid-pvhold.txt", "blkid-fsdisk.txt", "state-1.json", "state-2.json")
	// The scenario exits with its number of failures; each must-pass step
	// prints an "ok:" line, so a scenario that stopped early cannot pass.
	r.RequireOK(t)
	for _, want := range []string{
		"ok: new vmdata/vm-101-disk-0 kept, checksum intact, lv.absent_reappeared reported",
		"ok: new vmdata/vm-103-disk-0 kept, checksum intact, lv.absent_reappeared reported",
		"ok: refused vmdata/pvhold (LVM2_member), nothing changed",
		"ok: refused vmdata/origin (origin of snapshot), nothing changed",
		"ok: refused vmdata/extorig (external origin), nothing changed",
		"ok: an LV holding an ext4 file system is removed (content, not a layer)",
		"ok: keel wipe refuses a desired state writable by others, nothing changed",
		"ok: the removal of errvg/vm-105-disk-0 failed on EIO and its failure is recorded",
		"ok: a new keel process did not run the failed removal again (errvg/del-vm-105-disk-0 kept, data intact), reported it stuck",
		"ok: remedy 'keel wipe errvg/vm-105-disk-0' finished the removal",
		"ok: converged afterwards, the record of the finished removal dropped",
	} {
		if !strings.Contains(r.Output, want) {
			t.Errorf("scenario output lacks %q", want)
		}
	}
}
