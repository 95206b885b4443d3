//go:build e2e

// Package apply runs keel apply and keel run on a real kernel in the qemu
// test guest, in one boot: converge examples/vdo-on-bcache.cue from blank
// disks, prove a second apply runs no mutating command, re-assert an
// lvm.conf reset, refuse an invalid desired state, give a re-registered
// bcache device its tunables back from the daemon, and stop on a value the
// kernel clamps (reconcile.stuck) instead of looping. The scenario itself is
// scenario.sh; this test ships it with its inputs and checks its verdicts.
package apply

import (
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
	for _, line := range strings.Split(res.Output, "\n") {
		switch {
		case strings.HasPrefix(line, "PASS: "):
			t.Log(line)
		case strings.HasPrefix(line, "FAIL: "):
			t.Error(line)
		}
	}
	if ms, err := res.File("bcache-restore-ms"); err == nil {
		t.Logf("bcache tunables restored %s ms after re-registration", strings.TrimSpace(string(ms)))
	}
	res.RequireOK(t)
}
