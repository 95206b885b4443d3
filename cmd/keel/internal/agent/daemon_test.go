package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/cmd/keel/internal/alerts"
	"github.com/keel-storage/keel/cmd/keel/internal/testsock"
	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/reconcile"
)

// The daemon against a node snapshot recorded in the test guest: READY
// after the first pass, a textfile, config.invalid with the last good
// state kept, SIGHUP reload, STOPPING on cancel.
func TestDaemonLifecycle(t *testing.T) {
	snap, err := probes.ReadSnapshotFile("../../../../probes/testdata/snapshots/orphan-pv.txtar")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "desired.cue")
	// scan_lvs=0 is what the snapshot's host has: nothing to do.
	os.WriteFile(cfg, []byte("lvm: scanLVs: false\n"), 0o644)
	prom := filepath.Join(t.TempDir(), "keel.prom")

	sock, recv := testsock.Listen(t)
	t.Setenv("NOTIFY_SOCKET", sock)
	next := func() string {
		t.Helper()
		return string(recv())
	}

	a := New([]string{dir}, Wiring{Source: probes.Replay(snap), LVMConfPath: filepath.Join(t.TempDir(), "lvm.conf")})
	hup := make(chan os.Signal, 1)
	var logs strings.Builder
	d := &Daemon{Agent: a, Log: hclog.New(&hclog.LoggerOptions{Output: &syncWriter{b: &logs}, Level: hclog.Info}),
		Textfile: prom, NoUevents: true, Reload: hup, Debounce: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()

	if got := next(); !strings.HasPrefix(got, "READY=1\nSTATUS=0 actions converged, 0 stuck") {
		t.Fatalf("first notification %q", got)
	}
	b, _ := os.ReadFile(prom)
	if !strings.Contains(string(b), "keel_config_last_reload_successful 1") || !strings.Contains(string(b), "keel_reconcile_errors_total 0") {
		t.Fatalf("textfile:\n%s", b)
	}

	// An invalid desired state: reported, last good kept.
	os.WriteFile(cfg, []byte("lvm: scanLVs: 7\n"), 0o644)
	if got := next(); !strings.Contains(got, "1 error") {
		t.Fatalf("after invalid config: %q", got)
	}
	if a.Desired() == nil || *a.Desired().LVM.ScanLVs {
		t.Fatal("last good desired state not kept")
	}
	b, _ = os.ReadFile(prom)
	if !strings.Contains(string(b), "keel_config_last_reload_successful 0") || !strings.Contains(string(b), `keel_finding{id="config.invalid"`) {
		t.Fatalf("textfile:\n%s", b)
	}

	// Fixed, then SIGHUP: RELOADING, then READY with the finding cleared.
	os.WriteFile(cfg, []byte("lvm: scanLVs: false\n"), 0o644)
	if got := next(); !strings.Contains(got, "0 error") {
		t.Fatalf("after fix: %q", got)
	}
	hup <- os.Interrupt
	if got := next(); !strings.HasPrefix(got, "RELOADING=1\nMONOTONIC_USEC=") {
		t.Fatalf("reload: %q", got)
	}
	if got := next(); !strings.HasPrefix(got, "READY=1") {
		t.Fatalf("after reload: %q", got)
	}
	cancel()
	if got := next(); got != "STOPPING=1" {
		t.Fatalf("stop: %q", got)
	}
	<-done
	l := logs.String()
	for _, want := range []string{"config.invalid", "finding raised: finding=config.invalid", "finding cleared: finding=config.invalid"} {
		if !strings.Contains(l, want) {
			t.Errorf("log lacks %q:\n%s", want, l)
		}
	}
}

// syncWriter serializes writes from the daemon's goroutines.
type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func TestKeepFindingsOnFailedPass(t *testing.T) {
	prev := []reconcile.Finding{{ID: "reconcile.stuck", Object: "bcache:x"}, {ID: ConfigInvalidID, Object: "/etc/keel"}}
	got := keepFindings(prev, nil)
	if len(got) != 1 || got[0].ID != "reconcile.stuck" {
		t.Fatalf("%+v", got)
	}
	got = keepFindings(prev[:1], []reconcile.Finding{{ID: ConfigInvalidID, Object: "/etc/keel"}})
	if len(got) != 2 {
		t.Fatalf("%+v", got)
	}
}

// While a safe removal runs the textfile is rewritten on a timer; once it
// ends (and before any starts) nothing is written: no idle wake-up.
func TestPublishWipesOnlyWhileWiping(t *testing.T) {
	d := &Daemon{Log: hclog.NewNullLogger(), metrics: alerts.NewMetrics()}
	path := filepath.Join(t.TempDir(), "keel.prom")
	d.wipeTextfile.Store(path)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{}, 1)
	go d.publishWipes(ctx, started, 10*time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	if _, err := os.Stat(path); err == nil {
		t.Fatal("textfile written before any removal started")
	}
	d.metrics.WipeStarted("vg", "lv", func() (uint64, uint64, float64) { return 5, 10, 1 })
	started <- struct{}{}
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), "keel_wipe") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no wipe progress in the textfile:\n%s", b)
		}
		time.Sleep(5 * time.Millisecond)
	}
	d.metrics.WipeFinished("vg", "lv")
	time.Sleep(30 * time.Millisecond) // the loop notices the end
	os.Remove(path)
	time.Sleep(50 * time.Millisecond)
	if _, err := os.Stat(path); err == nil {
		t.Fatal("textfile rewritten after the removal ended")
	}
}
