package hostio

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Source is where a probe pass gets its facts: one Runner for commands and
// one FS for files. Live hosts, recorders and replays are all Sources.
type Source struct {
	Runner Runner
	FS     FS
	// SuspendWait is how long a pass waits for a suspended device-mapper
	// device to be resumed before it takes it for stuck (suspended.go):
	// zero for a replay, whose devices never change.
	SuspendWait time.Duration
}

// LiveOptions configure the DMRunner of a live Source. The library reads
// no environment: cmd/keel fills them in.
type LiveOptions struct {
	// NoDMIoctl runs dmsetup for every device-mapper read (DMRunner.NoIoctl).
	NoDMIoctl bool
	// DMLog receives a debug line for each dmsetup read DMRunner serves or
	// falls back on; nil means none.
	DMLog hclog.Logger
}

// Live returns a Source for this host: commands run with the given
// per-command timeout and files are read from root ("/" normally). On the
// root file system the dmsetup reads go through a DMRunner, served by ioctl
// unless opt.NoDMIoctl.
func Live(root string, timeout time.Duration, opt LiveOptions) Source {
	var r Runner = ExecRunner{Timeout: timeout}
	if root == "/" {
		r = &DMRunner{Exec: r, NoIoctl: opt.NoDMIoctl, Log: opt.DMLog}
	}
	return Source{Runner: r, FS: DirFS(root), SuspendWait: liveSuspendWait}
}

// liveSuspendWait is SuspendWait on a live host: longer than LVM keeps a
// device suspended in its commands (a VDO pool's suspend flushes its caches
// and takes seconds under load), short against the minutes a stuck device
// stalls the VMs on it.
const liveSuspendWait = 5 * time.Second

// Recorder wraps a Source and keeps every command and file access that goes
// through it, for writing a Snapshot. It is safe for concurrent use.
type Recorder struct {
	inner Source
	mu    sync.Mutex
	cmds  map[string]CmdRecord
	files map[string]FileRecord
	// timings of commands and of file operations, for --verbose output.
	cmdTime  map[string]time.Duration
	fileTime map[string]time.Duration
}

// NewRecorder returns a Recorder over inner.
func NewRecorder(inner Source) *Recorder {
	return &Recorder{inner: inner, cmds: map[string]CmdRecord{}, files: map[string]FileRecord{},
		cmdTime: map[string]time.Duration{}, fileTime: map[string]time.Duration{}}
}

// Source returns the recording Source to probe through.
func (r *Recorder) Source() Source {
	return Source{Runner: recRunner{r}, FS: recFS{r}, SuspendWait: r.inner.SuspendWait}
}

// Snapshot returns everything recorded so far, with the given header fields.
func (r *Recorder) Snapshot(host, version string, at time.Time) *Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &Snapshot{Host: host, Version: version, Time: at.UTC(),
		Commands: make(map[string]CmdRecord, len(r.cmds)), Files: make(map[string]FileRecord, len(r.files))}
	for k, v := range r.cmds {
		s.Commands[k] = v
	}
	for k, v := range r.files {
		s.Files[k] = v
	}
	return s
}

type recRunner struct{ r *Recorder }

// Timings returns how long each recorded command and each file access took
// (keyed by command line, or by operation and path). They are not part of
// the snapshot, whose bytes must not depend on them.
func (r *Recorder) Timings() map[string]time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]time.Duration, len(r.cmdTime)+len(r.fileTime))
	for k, v := range r.cmdTime {
		out[k] = v
	}
	for k, v := range r.fileTime {
		out[k] = v
	}
	return out
}

func (rr recRunner) Run(ctx context.Context, c Cmd) (Result, error) {
	start := time.Now()
	res, err := rr.r.inner.Runner.Run(ctx, c)
	rr.record(c, res, err, time.Since(start))
	return res, err
}

func (rr recRunner) record(c Cmd, res Result, err error, took time.Duration) {
	rec := CmdRecord{Argv: c.Argv(), Result: res}
	if err != nil {
		rec.Error = err.Error()
	}
	rr.r.mu.Lock()
	rr.r.cmds[c.String()] = rec
	rr.r.cmdTime[c.String()] = took
	rr.r.mu.Unlock()
}

type recFS struct{ r *Recorder }

func (f recFS) put(start time.Time, rec FileRecord, err error) {
	took := time.Since(start)
	if err != nil {
		rec.Data = nil
		rec.Error = err.Error()
		rec.NotExist = isNotExist(err)
	}
	f.r.mu.Lock()
	f.r.files[rec.key()] = rec
	f.r.fileTime[rec.key()] = took
	f.r.mu.Unlock()
}

func (f recFS) ReadFile(name string) ([]byte, error) {
	start := time.Now()
	b, err := f.r.inner.FS.ReadFile(name)
	f.put(start, FileRecord{Op: OpFile, Path: name, Data: b}, err)
	return b, err
}

func (f recFS) ReadDir(name string) ([]string, error) {
	start := time.Now()
	names, err := f.r.inner.FS.ReadDir(name)
	f.put(start, FileRecord{Op: OpDir, Path: name, Data: joinLines(names)}, err)
	return names, err
}

func (f recFS) Readlink(name string) (string, error) {
	start := time.Now()
	t, err := f.r.inner.FS.Readlink(name)
	f.put(start, FileRecord{Op: OpLink, Path: name, Data: []byte(t)}, err)
	return t, err
}

func (f recFS) ReadAt(name string, off int64, n int) ([]byte, error) {
	start := time.Now()
	b, err := f.r.inner.FS.ReadAt(name, off, n)
	f.put(start, FileRecord{Op: OpReadAt, Path: name, Off: off, N: n, Data: b}, err)
	return b, err
}

// Replay returns a Source that answers from the snapshot. A command or file
// access that was not recorded is an error naming it. A command is also
// found under the argv an older keel recorded it with (Migration.Cmd).
func Replay(s *Snapshot) Source {
	return Source{Runner: replayRunner{s}, FS: replayFS{s}}
}

type replayRunner struct{ s *Snapshot }

func (r replayRunner) Run(_ context.Context, c Cmd) (Result, error) {
	rec, ok := r.s.Commands[c.String()]
	if !ok {
		// A snapshot recorded by an older keel.
		for _, m := range migrations {
			if m.Cmd == nil {
				continue
			}
			if old, legacy := m.Cmd(c); legacy {
				if rec, ok = r.s.Commands[old.String()]; ok {
					break
				}
			}
		}
	}
	if !ok {
		return Result{ExitCode: -1}, fmt.Errorf("replay: command %q was not recorded in the snapshot", c.String())
	}
	if rec.Error != "" {
		return rec.Result, &recordedError{msg: rec.Error}
	}
	return rec.Result, nil
}

// ErrNotRecorded is the error of a replayed file access that the snapshot
// did not record: a snapshot captured by an older keel, which did not read
// that file. A reader tells it from a missing file, which was recorded.
var ErrNotRecorded = errors.New("was not recorded in the snapshot")

type replayFS struct{ s *Snapshot }

func (f replayFS) get(want FileRecord) ([]byte, error) {
	rec, ok := f.s.Files[want.key()]
	if !ok {
		return nil, fmt.Errorf("replay: %s %s %w", want.Op, want.describe(), ErrNotRecorded)
	}
	if rec.Error != "" {
		return nil, &recordedError{msg: rec.Error, notExist: rec.NotExist}
	}
	return rec.Data, nil
}

func (f replayFS) ReadFile(name string) ([]byte, error) {
	return f.get(FileRecord{Op: OpFile, Path: name})
}

func (f replayFS) ReadDir(name string) ([]string, error) {
	b, err := f.get(FileRecord{Op: OpDir, Path: name})
	if err != nil {
		return nil, err
	}
	return splitLines(b), nil
}

func (f replayFS) Readlink(name string) (string, error) {
	b, err := f.get(FileRecord{Op: OpLink, Path: name})
	return string(b), err
}

func (f replayFS) ReadAt(name string, off int64, n int) ([]byte, error) {
	return f.get(FileRecord{Op: OpReadAt, Path: name, Off: off, N: n})
}
