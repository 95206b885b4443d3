// Package convergetest holds fakes shared by the tests of the convergence
// loop and of the daemon around it: a sysfs that keeps what is written, a
// replayed host whose sysfs reads see those writes, and a runner that counts
// the commands a probe runs, and one that records the mutating commands
// without running them.
package convergetest

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keel-storage/keel/probes/hostio"
)

// MemSysFS records sysfs writes and reads them back unchanged.
type MemSysFS struct {
	Mu     sync.Mutex
	Files  map[string]string
	Writes []string // "path=value" in order
	// hold, when set, is waited on by the next read through StickyFS.
	hold chan struct{}
}

// HoldNextRead makes the next file read through StickyFS wait until
// release is called: a probe caught while it reads (release is idempotent).
func (m *MemSysFS) HoldNextRead() (release func()) {
	c := make(chan struct{})
	m.Mu.Lock()
	m.hold = c
	m.Mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(c) }) }
}

// NewMemSysFS returns an empty MemSysFS.
func NewMemSysFS() *MemSysFS { return &MemSysFS{Files: map[string]string{}} }

// WriteFile records data as name's value.
func (m *MemSysFS) WriteFile(name string, data []byte) error {
	m.Mu.Lock()
	defer m.Mu.Unlock()
	m.Files[name] = string(data)
	m.Writes = append(m.Writes, name+"="+string(data))
	return nil
}

// ReadFile returns the value last written to name ("" when none was).
func (m *MemSysFS) ReadFile(name string) ([]byte, error) {
	m.Mu.Lock()
	defer m.Mu.Unlock()
	return []byte(m.Files[name]), nil
}

// WriteLog returns the writes so far, joined by spaces.
func (m *MemSysFS) WriteLog() string {
	m.Mu.Lock()
	defer m.Mu.Unlock()
	return strings.Join(m.Writes, " ")
}

// StickyFS is a replayed host whose sysfs takes the values written to Sys.
type StickyFS struct {
	hostio.FS
	Sys *MemSysFS
}

// ReadFile serves a written sysfs value, else the replayed file; a read
// held by HoldNextRead first waits for its release.
func (f StickyFS) ReadFile(name string) ([]byte, error) {
	f.Sys.Mu.Lock()
	hold := f.Sys.hold
	f.Sys.hold = nil
	f.Sys.Mu.Unlock()
	if hold != nil {
		<-hold
	}
	f.Sys.Mu.Lock()
	v, ok := f.Sys.Files["/"+strings.TrimPrefix(name, "/")]
	f.Sys.Mu.Unlock()
	if ok {
		return []byte(v + "\n"), nil
	}
	return f.FS.ReadFile(name)
}

// CountingRunner counts the commands a replayed probe runs, each taking
// Delay (cut short when ctx ends) as a live one takes time.
type CountingRunner struct {
	hostio.Runner
	N     atomic.Int64
	Delay time.Duration
	// SlowLVM, in nanoseconds, is added to every lvm command while it is
	// not zero: a PV that answers slowly (set it while a daemon runs).
	SlowLVM atomic.Int64
}

// Run counts c, waits Delay (and SlowLVM for lvm) and replays it.
func (r *CountingRunner) Run(ctx context.Context, c hostio.Cmd) (hostio.Result, error) {
	r.N.Add(1)
	wait := r.Delay
	if c.Name == "lvm" {
		wait += time.Duration(r.SlowLVM.Load())
	}
	if wait > 0 {
		select {
		case <-ctx.Done():
			return hostio.Result{ExitCode: -1}, ctx.Err()
		case <-time.After(wait):
		}
	}
	return r.Runner.Run(ctx, c)
}

// Replayed returns a source replaying the node snapshot at path whose
// sysfs keeps writes (made through the returned MemSysFS), and the runner
// that counts its commands.
func Replayed(t testing.TB, path string) (hostio.Source, *MemSysFS, *CountingRunner) {
	t.Helper()
	snap, err := hostio.ReadSnapshotFile(path)
	if err != nil {
		t.Fatal(err)
	}
	src := hostio.Replay(snap)
	sys := NewMemSysFS()
	run := &CountingRunner{Runner: src.Runner}
	return hostio.Source{Runner: run, FS: StickyFS{src.FS, sys}}, sys, run
}

// RecordingRunner is the runner of mutating commands: it records every
// command (Cmds, as hostio.Cmd.String gives it) and reports success
// without running it.
type RecordingRunner struct {
	mu   sync.Mutex
	Cmds []string
}

// Run records c and reports success.
func (r *RecordingRunner) Run(_ context.Context, c hostio.Cmd) (hostio.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Cmds = append(r.Cmds, c.String())
	return hostio.Result{}, nil
}
