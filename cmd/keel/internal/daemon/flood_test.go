package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/converge"
)

// floodValid is a valid desired state told apart by its removal step.
func floodValid(mib int) string {
	return fmt.Sprintf("lvm: scanLVs: false\nremoval: step: \"%dM\"\n", mib)
}

// flood runs a daemon on a node snapshot while write changes its desired
// state, waits until the daemon has been quiet for a second, stops it and
// returns the loop (safe to read once Run returned), the number of passes
// (STATUS notifications after READY) and the last STATUS.
func flood(t *testing.T, write func(w *fakeWatches, cfg string)) (*converge.Loop, int, string) {
	t.Helper()
	snap, err := hostio.ReadSnapshotFile("../../../../probes/testdata/snapshots/orphan-pv.txtar")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "desired.cue")
	if err := os.WriteFile(cfg, []byte(floodValid(1)), 0o644); err != nil {
		t.Fatal(err)
	}
	d := &Daemon{Log: hclog.NewNullLogger(), Textfile: filepath.Join(t.TempDir(), "keel.prom"),
		NoUevents: true, Reload: make(chan os.Signal), Debounce: 20 * time.Millisecond}
	recv, w := wire(t, d, []string{dir}, converge.Wiring{StateDir: t.TempDir(), Source: hostio.Replay(snap),
		DpkgDir: t.TempDir(), LVMConfPath: filepath.Join(t.TempDir(), "lvm.conf")})
	a := d.Loop
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	msgs := make(chan string, 4096)
	go func() {
		for {
			m := string(recv())
			msgs <- m
			if m == "STOPPING=1" {
				close(msgs)
				return
			}
		}
	}()
	if got := <-msgs; !strings.HasPrefix(got, "READY=1") {
		t.Fatalf("first notification %q", got)
	}
	<-msgs // the first pass's STATUS
	write(w, cfg)
	passes, last := 0, ""
	for quiet := time.After(time.Second); ; {
		select {
		case m := <-msgs:
			if strings.HasPrefix(m, "STATUS=") {
				passes++
				last = m
			}
			quiet = time.After(time.Second)
			continue
		case <-quiet:
		}
		break
	}
	cancel()
	if err := <-done; err != nil && err != context.Canceled {
		t.Fatalf("Run: %v", err)
	}
	for m := range msgs { // until STOPPING=1: the reader is done with the socket
		if strings.HasPrefix(m, "STATUS=") {
			passes++
			last = m
		}
	}
	return a, passes, last
}

// Floods of desired-state writes: each burst is coalesced into a few
// passes (not one per write), and the daemon ends with the last valid
// desired state in force, config.invalid cleared.
func TestDaemonDesiredStateFlood(t *testing.T) {
	t.Run("100 writes in 2 s", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) { floodWrites(t) })
	})
	t.Run("valid and invalid every 200 ms", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) { floodFlips(t) })
	})
}

// floodWrites writes 100 valid desired states 20 ms apart.
func floodWrites(t *testing.T) {
	a, passes, last := flood(t, func(w *fakeWatches, cfg string) {
		for i := 2; i <= 101; i++ {
			w.write(t, cfg, floodValid(i))
			time.Sleep(20 * time.Millisecond)
		}
	})
	t.Logf("%d passes", passes)
	if got := a.Desired().Removal.Step; got != "101M" {
		t.Errorf("desired state in force has step %s, want the last write's 101M", got)
	}
	if passes < 1 || passes > 20 {
		t.Errorf("100 writes made %d passes, want 1 to 20 (debounced)", passes)
	}
	if !strings.Contains(last, " 0 error") {
		t.Errorf("last status %q", last)
	}
}

// floodFlips writes an invalid and a valid desired state by turns, 200 ms
// apart.
func floodFlips(t *testing.T) {
	a, passes, last := flood(t, func(w *fakeWatches, cfg string) {
		for i := 0; i < 20; i++ {
			body := "lvm: scanLVs: 7\n" // invalid
			if i%2 == 1 {
				body = floodValid(200 + i)
			}
			w.write(t, cfg, body)
			time.Sleep(200 * time.Millisecond)
		}
	})
	t.Logf("%d passes", passes)
	if got := a.Desired().Removal.Step; got != "219M" {
		t.Errorf("desired state in force has step %s, want the last valid write's 219M", got)
	}
	if passes < 1 || passes > 25 {
		t.Errorf("20 flips made %d passes, want 1 to 25 (at most one per write, plus the resync)", passes)
	}
	if !strings.Contains(last, " 0 error") {
		t.Errorf("last status %q: config.invalid not cleared by the last, valid, write", last)
	}
}
