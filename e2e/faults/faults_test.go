//go:build e2e

package faults

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// report is the part of keel check's JSON report the test reads.
type report struct {
	Findings []struct {
		ID       string `json:"id"`
		Severity string `json:"severity"`
		Object   string `json:"object"`
	} `json:"findings"`
}

// phase is one state of the guest and what keel check must say about it.
type phase struct {
	name string
	// want is the exact sorted list of "id@object" findings.
	want []string
	// rc is keel check's exit status (1: a finding at warning or above).
	rc string
}

func TestFaults(t *testing.T) {
	root := guest.RepoRoot(t)
	files := map[string][]byte{}
	for rel, as := range map[string]string{
		"reconcile/plan/testdata/desired/faults.cue":        "desired/faults.cue",
		"reconcile/plan/testdata/desired/faults-memory.cue": "desired/faults-memory.cue",
		"e2e/faults/scenario.sh":                            "faults.sh",
	} {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		files[as] = b
	}
	r := guest.Run(t, guest.Spec{
		Disks: []guest.Disk{{Kind: guest.NVMe, Size: "20G", Serial: "nvme0"}, {Kind: guest.HDD, Size: "4G", Serial: "hdd1"}},
		Files: files, Keel: true, Script: "exec bash /mnt/host/faults.sh", Mem: "2G", Timeout: 10 * time.Minute,
	})
	r.RequireOK(t)
	t.Logf("guest wall time %.0fs", r.Wall.Seconds())

	// The 10G pool has 3 slabs and a slab remainder in every phase; the
	// base phase shows it alone, so every other ID comes from its fault.
	const rem = "vdo.slab_remainder@fvg/vpool"
	phases := []phase{
		{name: "base", rc: "0", want: []string{rem}},
		// A thin pool (tvg, not declared) whose metadata writes land 12 s
		// late: keel check reads its status without committing it, so it
		// does not wait (slowRead below); the pool, undeclared, is audited
		// against the reference rules, which flag LVM's default zeroing.
		{name: "thin-slow-metadata", rc: "1", want: []string{"thin.zeroing@tvg/tpool", rem}},
		{name: "index-closed", rc: "1", want: []string{"vdo.index@fvg/vpool", rem}},
		// Reads of the PV 6 s late, dm-vdo's dedupe timeout 5 s: a rewrite
		// of indexed data times out waiting for the index's chapter reads.
		{name: "dedupe-timeouts", rc: "1", want: []string{"vdo.dedupe_timeouts@fvg/vpool", rem}},
		// The pool started with its data read 0.5 s late: the index is still
		// opening when keel checks. Info, not an error: dm-vdo opens it
		// after every start.
		{name: "index-opening", rc: "0", want: []string{"vdo.index_opening@fvg/vpool", rem}},
		// LVM reads no VG from a PV returning EIO while the kernel runs
		// fvg's LVs: keel reports the VG unreadable (critical) and plans
		// nothing for it; its message names the read-only pool and the
		// device under it (TestUnreadableVGNamesWhatRuns on the capture).
		{name: "eio", rc: "1", want: []string{"vg.unreadable@fvg"}},
		{name: "readonly", rc: "1", want: []string{"vdo.mode@fvg/vpool", rem}},
		// vpool2 is not declared: audited, its slab remainder reported.
		{name: "memory-inactive", rc: "1", want: []string{"vdo.memory@host", "vdo.mode@fvg/vpool", rem, "vdo.slab_remainder@fvg/vpool2"}},
		{name: "memory-create", rc: "1", want: []string{"vdo.memory@host", "vdo.missing@fvg/vpool3", "vdo.mode@fvg/vpool", rem,
			"vdo.slab_remainder@fvg/vpool2"}},
	}
	for _, p := range phases {
		t.Run(p.name, func(t *testing.T) {
			got, rc := findings(t, r, p.name)
			if rc != p.rc || !slices.Equal(got, p.want) {
				t.Errorf("keel check (%s): exit %s, findings\n got %q\nwant exit %s and %q", p.name, rc, got, p.rc, p.want)
			}
		})
	}
	t.Run("thin-slow-metadata-time", func(t *testing.T) { slowRead(t, r) })
	// keel apply on the failing and on the read-only pool: it ran (its
	// probe commands are in the log), did not hang, changed nothing.
	for _, name := range []string{"eio", "readonly"} {
		t.Run("apply-"+name, func(t *testing.T) { applyChangedNothing(t, r, name) })
	}
	if dir := os.Getenv("KEEL_FAULTS_SNAPSHOT_DIR"); dir != "" {
		for _, p := range phases {
			b, err := r.File(p.name + ".txtar")
			if err != nil {
				t.Error(err)
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, "fault-"+p.name+".txtar"), b, 0o644); err != nil {
				t.Error(err)
			}
		}
	}
}

// findings reads a phase's keel check report: sorted "id@object" keys and
// the exit status.
func findings(t *testing.T, r *guest.Result, name string) ([]string, string) {
	t.Helper()
	js, err := r.File(name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	rcb, err := r.File(name + ".rc")
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatalf("keel check (%s): %v\n%s", name, err, js)
	}
	got := []string{}
	for _, f := range rep.Findings {
		got = append(got, f.ID+"@"+f.Object)
	}
	sort.Strings(got)
	return got, strings.TrimSpace(string(rcb))
}

// applyChangedNothing checks the keel apply of a phase: it ran commands, none
// of them mutating, it ended before its 240 s bound, and (where LVM can read
// the PV) lvs listed the pool and printed the same before and after.
func applyChangedNothing(t *testing.T, r *guest.Result, name string) {
	t.Helper()
	read := func(suffix string) string {
		b, err := r.File(name + suffix)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	rc, secs, cmds := read(".apply.rc"), read(".apply.secs"), read(".cmds")
	n, err := strconv.Atoi(secs)
	if err != nil || rc == "124" || n >= 240 {
		t.Errorf("keel apply (%s): exit %s after %ss: it hung", name, rc, secs)
	}
	lines := strings.Split(cmds, "\n")
	if cmds == "" {
		t.Fatalf("keel apply (%s): empty command log (exit %s)\n%s", name, rc, read(".apply.txt"))
	}
	for _, l := range lines {
		var argv []string
		if err := json.Unmarshal([]byte(l), &argv); err != nil || len(argv) == 0 {
			t.Errorf("keel apply (%s): command log line %q: %v", name, l, err)
			continue
		}
		if guest.Mutating(argv) {
			t.Errorf("keel apply (%s) ran a mutating command: %s", name, l)
		}
	}
	if name == "eio" {
		// LVM reads nothing from a PV returning EIO: no lvs to compare.
		t.Logf("keel apply (%s): exit %s in %ss, %d commands, none mutating", name, rc, secs, len(lines))
		return
	}
	before, after := read(".lvs-before"), read(".lvs-after")
	if !strings.Contains(before, "vpool") {
		t.Fatalf("keel apply (%s): lvs before it lists no vpool:\n%s", name, before)
	}
	if before != after {
		t.Errorf("keel apply (%s) changed lvs:\nbefore\n%s\nafter\n%s", name, before, after)
	}
	t.Logf("keel apply (%s): exit %s in %ss, %d commands, none mutating; lvs:\n%s", name, rc, secs, len(lines), before)
}

// slowRead checks the thin-slow-metadata phase: keel check ended within
// 10 s while a status read that commits the pool's metadata first (plain
// dmsetup status, timed after it) took the 12 s of the slow write or more.
// Without DM_NOFLUSH_FLAG on the status ioctl keel check waits for the
// writes too, its lvm fullreport stuck behind the commit, and runs into
// its timeout (docs/reliability.md). The second bound is what makes the
// first one mean something.
func slowRead(t *testing.T, r *guest.Result) {
	t.Helper()
	read := func(name string) int {
		b, err := r.File(name)
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return n
	}
	secs, flushMS := read("thin-slow-metadata.secs"), read("thin-slow-metadata.flush-ms")
	if flushMS < 12000 {
		t.Errorf("dmsetup status of the pool took %d ms: the delayed metadata writes did not slow a committing read, so the phase proves nothing", flushMS)
	}
	if secs >= 10 {
		t.Errorf("keel check took %d s with the pool's metadata writes 12 s late (a committing dmsetup status: %d ms): a status read committed the pool's metadata", secs, flushMS)
	}
	t.Logf("keel check %d s; dmsetup status (commits first) %d ms", secs, flushMS)
}
