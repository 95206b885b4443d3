//go:build e2e

package underfire

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
	"github.com/keel-storage/keel/reconcile/plan"
)

// Bounds. A pass of this guest's stack takes 1–3 s under TCG, so passes
// that coalesce their triggers run at most back to back: over a 10 s flood
// and its 15 s of quiet that is well under maxFloodPasses, and at most one
// pass runs and one more is queued when a flood ends. A pass per event
// would be hundreds.
const (
	maxFloodPasses = 20
	// maxFlipPasses: at most one pass per write of the flipping flood (15
	// valid, 15 invalid, the last valid one).
	maxFlipPasses = 31
	// maxCores is keel's CPU over a flood window (its own and the commands
	// it ran), in cores: under TCG one back-to-back pass loop uses about
	// one; a pass per event would use both and still be running.
	maxCores = 1.2
	// maxSlowChangeMs bounds a bcache tunable's change made while a pass
	// over a slow PV runs: the pass, still reading, is preempted and the
	// change takes the fast path (converge.Gate) instead of waiting for
	// the slow pass, which takes far longer (docs/reliability.md).
	maxSlowChangeMs = 10000
	// wantPass is the number of PASS lines underfire.sh prints.
	wantPass = 18
)

func TestUnderFire(t *testing.T) {
	read := func(rel string) []byte { return guest.RepoFile(t, rel) }
	files := map[string][]byte{
		"keel.deb":  guest.Deb(t),
		"stacks.sh": read("e2e/scenarios/stacks.sh"),
	}
	// KEEL_UNDERFIRE_BEFORE names a static keel built from older code: the
	// scenario first runs the slow-PV step under it (the failing-before
	// evidence of docs/reliability.md), then everything under the .deb.
	if p := os.Getenv("KEEL_UNDERFIRE_BEFORE"); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files["keel-before"] = b
	}
	m := guest.New(t, guest.Spec{
		Flavour: guest.Systemd,
		Disks: []guest.Disk{
			{Kind: guest.NVMe, Size: "2G", Serial: "nvme0"},
			{Kind: guest.SSD, Size: "1G", Serial: "ssd1"},
			{Kind: guest.HDD, Size: "2G", Serial: "hdd1"},
			{Kind: guest.Virtio, Size: "1G", Serial: "flood1"},
		},
		Files:   files,
		Mem:     "2G",
		Timeout: 15 * time.Minute,
	})
	r := m.Boot(t, string(read("e2e/underfire/underfire.sh")))
	t.Logf("guest wall time %.0fs", r.Wall.Seconds())
	passes := r.Verdicts(t, "figure: ")
	if r.ExitCode != 0 || passes != wantPass {
		t.Errorf("scenario exit %d with %d PASS lines (want 0 and %d); output tail:\n%s", r.ExitCode, passes, wantPass, r.Tail(40))
	}
	file := func(name string) string {
		b, err := r.File(name)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}

	t.Run("floods", func(t *testing.T) {
		seen := map[string]bool{}
		for _, l := range strings.Split(file("floods.txt"), "\n") {
			var name string
			var wall, self, children, hz, n int
			if _, err := fmt.Sscan(l, &name, &wall, &self, &children, &hz, &n); err != nil || wall == 0 || hz == 0 {
				t.Fatalf("floods.txt line %q: %v", l, err)
			}
			seen[name] = true
			cores := float64(self+children) / float64(hz) / (float64(wall) / 10)
			t.Logf("%s: %d passes, %.2f cores (self %.2f s, children %.2f s over %.1f s)",
				name, n, cores, float64(self)/float64(hz), float64(children)/float64(hz), float64(wall)/10)
			limit := maxFloodPasses
			if name == "flips" {
				limit = maxFlipPasses
			}
			if n > limit {
				t.Errorf("%s: %d passes, want at most %d", name, n, limit)
			}
			if cores > maxCores {
				t.Errorf("%s: keel used %.2f cores, want at most %.1f", name, cores, maxCores)
			}
		}
		for _, name := range []string{"uevents", "writes", "flips"} {
			if !seen[name] {
				t.Errorf("no figures for the %s flood", name)
			}
		}
	})

	t.Run("slow-pv", func(t *testing.T) {
		ms, err := strconv.Atoi(file("slow.fastpath_ms"))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("a bcache tunable changed while a pass over the slow PV ran was applied after %d ms", ms)
		if ms >= maxSlowChangeMs {
			t.Errorf("a bcache tunable changed while a pass over the slow PV ran was not applied within %d ms", maxSlowChangeMs)
		}
	})

	t.Run("eio", func(t *testing.T) {
		cmds := file("eio.cmds")
		if cmds == "" {
			t.Fatal("keel ran no command under EIO: its passes did not run")
		}
		lines := strings.Split(cmds, "\n")
		for _, l := range lines {
			var argv []string
			if err := json.Unmarshal([]byte(l), &argv); err != nil {
				t.Errorf("command log line %q: %v", l, err)
				continue
			}
			// The scenario changes a declared bcache tunable under EIO
			// (underfire.sh "desired 22"), which keel's bcache udev rule
			// carries: keel rewrites the rule, a file of this host, and
			// reloads udevd's rules, which rereads files and changes no
			// block device (udevadm(8), control --reload). That is no
			// write to the failing storage.
			if guest.Mutating(argv) && !slices.Equal(argv, plan.UdevReload) {
				t.Errorf("keel ran a mutating command under EIO: %s", l)
			}
		}
		t.Logf("%d commands under EIO, none mutating", len(lines))
		var raised []string
		for _, e := range strings.Split(file("journal-export.txt"), "\n\n") {
			f := fields(e)
			if f["MESSAGE"] == "finding raised" && f["SEVERITY"] == "critical" {
				raised = append(raised, f["FINDING"]+"@"+f["OBJECT"]+": "+f["F_MESSAGE"])
			}
			if f["MESSAGE"] == "finding raised" && f["FINDING"] == "vg.unreadable" {
				t.Logf("vg.unreadable: %s", f["F_MESSAGE"])
			}
		}
		found := false
		for _, s := range raised {
			found = found || strings.HasPrefix(s, "vg.unreadable@fvg")
		}
		if !found {
			t.Errorf("no critical vg.unreadable@fvg raised under EIO; critical findings raised: %q", raised)
		}
	})
}

// fields parses one entry of journalctl -o export (text fields only). keel's
// journald sink sends a log key as its upper-case field, and a key that is
// one of its own fields as F_<key>: a finding's message is F_MESSAGE.
func fields(entry string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(entry, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}
