//go:build e2e

package boot

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// bootCostBoots reads a boot count from the environment variable name, or
// returns def.
func bootCostBoots(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a boot count", name, v)
	}
	return n
}

// TestBootCost is the boot-cost benchmark of docs/boot.md (`make bench`,
// part boot): one systemd guest with the stack of
// examples/vdo-on-bcache.cue, rebooted again and again with its disks kept,
// the activation mode alternating boot by boot between keel's units
// (keel-activate.service, keel.service) and the bare `vgchange -aay` per VG
// (lvm-bare.service), first at ~50 LVs, then at 2,000, after one warm-up
// boot that is not counted. Each boot prints one
// "bootcost" line (bootcost.sh), logged here with the host's load average;
// e2e/bench/report makes the medians. It only runs when e2e/bench.sh asks
// (KEEL_BENCH_BOOTCOST=1): a dozen boots have no place in CI's e2e run.
//
//	KEEL_BOOTCOST_BOOTS_50    measured boots at ~50 LVs (default 6)
//	KEEL_BOOTCOST_BOOTS_2000  measured boots at 2,000 LVs (default 4)
func TestBootCost(t *testing.T) {
	if os.Getenv("KEEL_BENCH_BOOTCOST") != "1" {
		t.Skip("a benchmark: e2e/bench.sh (BENCH_ONLY=boot) runs it with KEEL_BENCH_BOOTCOST=1")
	}
	n50 := bootCostBoots(t, "KEEL_BOOTCOST_BOOTS_50", 6)
	n2000 := bootCostBoots(t, "KEEL_BOOTCOST_BOOTS_2000", 4)
	// The setup builds a VDO pool under TCG: up to ~15 minutes on a loaded host.
	m := stackMachine(t, 25*time.Minute, map[string]string{
		"scale.sh":         "e2e/scenarios/scale.sh",
		"lvm-bare.service": "e2e/boot/lvm-bare.service",
	})
	r := m.Boot(t, string(repoFile(t, "e2e/boot/bootcost-setup.sh")))
	verdicts(t, "setup", r, 5)
	if t.Failed() {
		t.FailNow()
	}
	script := string(repoFile(t, "e2e/boot/bootcost.sh"))
	// Boot -1 is a warm-up, run and checked but not counted: the first
	// boot after the setup reached udev's coldplug 7 s later than the
	// boots after it, before any activation unit ran, and it was always
	// one mode's.
	for i := -1; i < n50+n2000; i++ {
		s := script
		if i == n50-1 && n2000 > 0 {
			// After the shebang line: the last boot at ~50 LVs grows vdovg.
			s = strings.Replace(s, "\n", "\nGROW=2000\n", 1)
		}
		load := hostLoad()
		r := m.Boot(t, s)
		found := false
		for _, line := range strings.Split(r.Output, "\n") {
			switch {
			case strings.HasPrefix(line, "bootcost ") && i < 0:
				found = true
				t.Logf("warm-up boot, not counted: %s", line)
			case strings.HasPrefix(line, "bootcost "):
				found = true
				// The line e2e/bench/report reads.
				fmt.Printf("%s hostload=%s wall_s=%.1f\n", line, load, r.Wall.Seconds())
			case strings.HasPrefix(line, "timeline "):
				t.Logf("boot %d: %s", i+3, line)
			case strings.HasPrefix(line, "FAIL: "):
				t.Errorf("boot %d: %s", i+3, line)
			}
		}
		// A boot whose checks failed is reported above and the next ones
		// still run; without its line the modes can no longer be told apart.
		if !found {
			t.Fatalf("boot %d: exit %d, no bootcost line; output tail:\n%s", i+3, r.ExitCode, r.Tail(30))
		}
	}
}

// hostLoad is the host's one-minute load average before a boot: the guests
// of other jobs share the machine, and the report says how loaded it was.
func hostLoad() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b))[0]
}
