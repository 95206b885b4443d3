//go:build e2e

// Package apply runs keel apply and keel run on a real kernel in the qemu
// test guest, in one boot: converge examples/vdo-on-bcache.cue from blank
// disks, prove a second apply runs no mutating command, re-assert an
// lvm.conf reset, refuse an invalid desired state, give a re-registered
// bcache device its tunables back from the daemon, and stop on a value the
// kernel clamps (reconcile.stuck) instead of looping; each daemon exits 0 on
// SIGTERM. The scenario itself is scenario.sh; this test ships it with its
// inputs and checks its verdicts.
package apply

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

func TestApplyAndDaemon(t *testing.T) {
	root := guest.RepoRoot(t)
	read := func(p string) []byte {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	files := map[string][]byte{
		"stacks.sh":                 read("e2e/scenarios/stacks.sh"),
		"desired/vdo-on-bcache.cue": read("examples/vdo-on-bcache.cue"),
	}
	desired, _ := filepath.Glob(filepath.Join(root, "e2e/apply/desired/*.cue"))
	for _, p := range desired {
		files["desired/"+filepath.Base(p)] = read(strings.TrimPrefix(p, root+"/"))
	}
	res := guest.Run(t, guest.Spec{
		Disks: []guest.Disk{
			{Kind: guest.NVMe, Size: "20G", Serial: "nvme0"},
			{Kind: guest.HDD, Size: "60G", Serial: "hdd1"},
			{Kind: guest.SSD, Size: "8G", Serial: "ssd2"},
		},
		Script: string(read("e2e/apply/scenario.sh")),
		Files:  files, Keel: true, Mem: "3G", Timeout: 10 * time.Minute,
	})
	passes := res.Verdicts(t)
	if ms, err := res.File("bcache-restore-ms"); err == nil {
		t.Logf("bcache tunables restored %s ms after re-registration", strings.TrimSpace(string(ms)))
	}
	// The runs that must change nothing, judged again by the harness's
	// list of mutating programs (the script's grep has no env prefix).
	for _, name := range []string{"apply2.cmds", "apply3b-2.cmds"} {
		b, err := res.File(name)
		if err != nil {
			t.Error(err)
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if lines[0] == "" {
			t.Errorf("%s: empty command log: keel apply did not run", name)
			continue
		}
		for _, l := range lines {
			var argv []string
			if err := json.Unmarshal([]byte(l), &argv); err != nil {
				t.Errorf("%s: command log line %q: %v", name, l, err)
			} else if guest.Mutating(argv) {
				t.Errorf("%s: a mutating command where keel must change nothing: %s", name, l)
			}
		}
	}
	if res.ExitCode != 0 || passes != wantPass {
		t.Errorf("scenario exit %d with %d PASS lines (want 0 and %d): a scenario that stopped early cannot pass; output tail:\n%s",
			res.ExitCode, passes, wantPass, res.Tail(40))
	}
}

// wantPass is the number of PASS lines scenario.sh prints: 11 of the
// applies (steps 1 to 4), 5 of the daemon and its exit after SIGTERM
// (step 5), the clamp, the second daemon and its exit (step 6).
const wantPass = 20
