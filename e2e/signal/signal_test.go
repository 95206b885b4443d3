//go:build e2e

// Package signal proves on a real kernel that keel run notices every kind
// of LVM and device-mapper change made behind its back with no resync to
// fall back on (--resync 1h): lvcreate (active and inactive), lvextend,
// lvchange --addtag and lvremove of an inactive LV, lvchange -an, pvcreate,
// vgextend, pvmove and a bcache re-registration, each followed within the
// metadata poll interval plus a margin by a pass that saw the change; that
// an idle daemon, still running, runs no pass; and that each daemon exits 0
// on SIGTERM. The scenario is scenario.sh.
package signal

import (
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

func TestChangeSignal(t *testing.T) {
	res := guest.Run(t, guest.Spec{
		Disks: []guest.Disk{
			{Kind: guest.NVMe, Size: "8G", Serial: "nvme0"},
			{Kind: guest.HDD, Size: "8G", Serial: "hdd1"},
			{Kind: guest.SSD, Size: "2G", Serial: "ssd2"},
			{Kind: guest.HDD, Size: "4G", Serial: "hdd3"},
		},
		Script: string(guest.RepoFile(t, "e2e/signal/scenario.sh")),
		Files: map[string][]byte{
			"stacks.sh":          guest.RepoFile(t, "e2e/scenarios/stacks.sh"),
			"desired/bcache.cue": guest.RepoFile(t, "e2e/apply/desired/bcache.cue"),
		},
		Keel: true, Timeout: 10 * time.Minute,
	})
	passes := res.Verdicts(t)
	for _, f := range []string{"reaction-ms.txt", "idle-cpu.txt"} {
		if b, err := res.File(f); err == nil {
			t.Logf("%s:\n%s", f, b)
		}
	}
	if res.ExitCode != 0 || passes != wantPass {
		t.Errorf("scenario exit %d with %d PASS lines (want 0 and %d): a scenario that stopped early cannot pass; output tail:\n%s",
			res.ExitCode, passes, wantPass, res.Tail(40))
	}
}

// wantPass is the number of PASS lines scenario.sh prints: ten changes
// seen, two of the bcache re-registration, the idle minute, the daemon's
// exit after SIGTERM, the first poll, three changes the poll alone saw and
// the second daemon's exit.
const wantPass = 19
