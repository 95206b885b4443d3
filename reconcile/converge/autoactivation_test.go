package converge

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keel-storage/keel/probes/hostio"
)

// Activate waits while lvm2's own autoactivation runs for a declared VG,
// and only then: an undeclared VG's, or one past the deadline, holds
// nothing. The clock is synctest's.
func TestActivateWaitsForLVMAutoactivation(t *testing.T) {
	synctest.Test(t, testActivateWaitsForLVMAutoactivation)
}

func testActivateWaitsForLVMAutoactivation(t *testing.T) {
	dir, root := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "d.cue"), []byte("volumeGroups: vdovg: pvs: [\"/dev/sdb\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	proc := func(pid, cmdline string) string {
		d := filepath.Join(root, "proc", pid)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "cmdline"), []byte(cmdline), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	l := New([]string{dir}, Wiring{Source: hostio.Source{Runner: failingRunner{}, FS: hostio.DirFS(root)}, SkipOwnerCheck: true})
	if err := l.Load(l.Read()); err != nil {
		t.Fatal(err)
	}
	wait := func(deadline time.Duration) (time.Duration, [][]string) {
		var told [][]string
		start := time.Now()
		l.waitForLVMActivation(context.Background(), ActivateOptions{Deadline: start.Add(deadline),
			LVMActivating: func(vgs []string) { told = append(told, vgs) }})
		return time.Since(start), told
	}

	proc("500", "/usr/sbin/lvm\x00vgchange\x00-aay\x00--autoactivation\x00event\x00othervg\x00")
	if took, told := wait(time.Minute); took != 0 || told != nil {
		t.Errorf("an undeclared VG's activation held keel %v (told %q)", took, told)
	}

	busy := proc("412", "/usr/sbin/lvm\x00vgchange\x00-aay\x00--autoactivation\x00event\x00vdovg\x00")
	if took, told := wait(0); took != 0 || len(told) != 1 {
		t.Errorf("past the deadline: waited %v, told %q", took, told)
	}
	go func() {
		time.Sleep(500 * time.Millisecond)
		os.RemoveAll(busy)
	}()
	took, told := wait(time.Minute)
	if took != 600*time.Millisecond || len(told) != 2 || !slices.Equal(told[0], []string{"vdovg"}) || told[1] != nil {
		t.Errorf("waited %v for lvm2's activation of vdovg (ended after 500ms, polled every 200ms), told %q", took, told)
	}
}
