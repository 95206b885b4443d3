//go:build e2e

// Package boot proves that a reboot is boring, on a real kernel in the
// systemd flavour of the test guest, over three cold boots of one machine:
//
//  1. install keel's .deb, build examples/vdo-on-bcache.cue (bcache in front
//     of the slow disk, a split VDO pool, vdovg stacked on the VDO LV) with
//     keel apply, write data, install keel's udev rules, enable the units and
//     a pve-guests stand-in (boot1.sh);
//  2. reboot: vdovg is active before the stand-in runs, the bcache tunables
//     are back, lvm.conf is intact, keel.service is READY, the journal holds
//     keel's structured entries, the data's checksum matches (boot2.sh);
//  3. reboot without the slow disk: keel-activate fails naming it and the
//     stand-in does not start (boot3.sh).
package boot

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// verdicts fails the test for every FAIL: line and logs the PASS: lines;
// the boot's script must exit 0 having printed exactly want PASS lines, so
// one that stopped early cannot pass.
func verdicts(t *testing.T, boot string, r *guest.Result, want int) {
	t.Helper()
	passes := 0
	for _, line := range strings.Split(r.Output, "\n") {
		switch {
		case strings.HasPrefix(line, "PASS: "):
			passes++
			t.Logf("%s: %s", boot, line)
		case strings.HasPrefix(line, "FAIL: "):
			t.Errorf("%s: %s", boot, line)
		}
	}
	if r.ExitCode != 0 || passes != want {
		t.Errorf("%s: scenario exit %d with %d PASS lines (want 0 and %d); output tail:\n%s", boot, r.ExitCode, passes, want, r.Tail(30))
	}
}

// The number of PASS lines each boot's script prints.
const (
	wantBoot1 = 10 // boot1.sh: the .deb and keel-boot, the stack, the rules, the units
	wantBoot2 = 17 // boot2.sh: the reboot's order, READY (keel-boot's fast path, its wait on inotify), keel activate's wait, tunables, lvm.conf, keel.service, journal, data
	wantBoot3 = 6  // boot3.sh: the missing disk
)

// repoFile returns a repository file read for a guest boot.
func repoFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(guest.RepoRoot(t), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("boot test input: %v", err)
	}
	return b
}

// stackMachine is the systemd guest both tests of this package reboot:
// the disks of examples/vdo-on-bcache.cue in the guest (nvme0, the slow
// hdd1, the cache ssd2), keel's .deb, stacks.sh, the desired state and the
// pve-guests stand-in in the share, plus the repository files extra names
// (share name: repository path).
func stackMachine(t *testing.T, timeout time.Duration, extra map[string]string) *guest.Machine {
	t.Helper()
	files := map[string][]byte{
		"keel.deb":           guest.Deb(t),
		"stacks.sh":          repoFile(t, "e2e/scenarios/stacks.sh"),
		"desired.cue":        repoFile(t, "examples/vdo-on-bcache.cue"),
		"pve-guests.service": repoFile(t, "e2e/boot/pve-guests.service"),
	}
	for name, rel := range extra {
		files[name] = repoFile(t, rel)
	}
	return guest.New(t, guest.Spec{
		Flavour: guest.Systemd,
		Disks: []guest.Disk{
			{Kind: guest.NVMe, Size: "20G", Serial: "nvme0"},
			{Kind: guest.HDD, Size: "60G", Serial: "hdd1"},
			{Kind: guest.SSD, Size: "8G", Serial: "ssd2"},
		},
		Files:   files,
		Mem:     "3G",
		Timeout: timeout,
	})
}

func TestRebootIsBoring(t *testing.T) {
	// The scripts are read at each boot.
	read := func(rel string) []byte { return repoFile(t, rel) }
	m := stackMachine(t, 10*time.Minute, nil)
	r1 := m.Boot(t, string(read("e2e/boot/boot1.sh")))
	verdicts(t, "boot 1", r1, wantBoot1)
	if !strings.Contains(r1.Output, "PASS: keel apply converged the stack") {
		t.FailNow() // no stack to reboot
	}
	r2 := m.Boot(t, string(read("e2e/boot/boot2.sh")))
	verdicts(t, "boot 2", r2, wantBoot2)
	if ms := regexp.MustCompile(`activate_start_to_ready_ms=(\d+)`).FindStringSubmatch(r2.Output); ms != nil {
		t.Logf("keel-activate start to READY: %s ms (guest wall %.1fs)", ms[1], r2.Wall.Seconds())
	}
	m.Detach("hdd1")
	r3 := m.Boot(t, string(read("e2e/boot/boot3.sh")))
	verdicts(t, "boot 3", r3, wantBoot3)
}
