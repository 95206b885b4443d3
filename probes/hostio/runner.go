// Package hostio is keel's process and file layer: the one place that
// starts child processes (ExecRunner) and reads the host's files (DirFS),
// the allowlist every mutating command passes, and the record and replay of
// both (Recorder, Snapshot, Replay). Every command goes through a Runner and
// every file through an FS, so a probe pass can be recorded into a node
// snapshot and replayed anywhere by the same code path.
package hostio

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"

	"github.com/keel-storage/keel/probes/shell"
)

// Cmd is one command invocation. Name and Args form the argv; they never go
// through a shell.
type Cmd struct {
	Name string
	Args []string
	// Env is added to the environment of the command (KEY=value), after
	// LC_ALL=C; the alerts hook passes the finding in it.
	Env []string
	// Stdin, when set, is the command's standard input.
	Stdin []byte
	// Timeout, when above zero, bounds this command instead of the
	// runner's own; Unbounded runs it to its end (Bound says which
	// commands keel runs so).
	Timeout time.Duration
	// ReadOnly marks a command that only reads (the probe's reports): once
	// its context is done, ExecRunner kills it and returns at once, and
	// the process is reaped in the background. A killed process can take
	// seconds to end: a read in flight on a slow or failing device must
	// complete first (e2e/underfire: 5 s per I/O under a dm-delay PV), and
	// the daemon's preempted pass, and the bcache fast path behind it,
	// would wait for it. A command that may change the host is always
	// waited for, so that whatever looks next sees all it did.
	ReadOnly bool
	// Consume, when set, is handed the command's standard output while
	// the command runs, in another goroutine: each call of next returns
	// all the output written so far, blocking until there is more than
	// the call before returned or the command has ended; done is true
	// once the command has ended and out is all of its output. Run
	// returns once both the command and Consume have ended, with the
	// Result it returns without Consume. ExecRunner calls it (off Linux,
	// or without memfd_create, once with all of the output after the
	// command ended); a runner that answers without starting the command
	// (a replay, a cache, the dm ioctls) may leave it uncalled, so the
	// caller falls back to Result.Stdout when Consume saw no whole output.
	//
	// It lets the probe decode `lvm fullreport` as LVM writes it: at
	// thousands of LVs LVM writes its report over the last second or two
	// of its run, and decoding it after the exit was the largest part of
	// `keel check` beyond the report itself. Being part of Cmd, it passes
	// through every Runner that wraps another and hands Cmd on unchanged:
	// no wrapper has to know about streaming for it to keep working.
	Consume func(next func() (out []byte, done bool))
}

// Argv returns the full argument vector, program name first.
func (c Cmd) Argv() []string {
	return append([]string{c.Name}, c.Args...)
}

// String joins the argv with spaces, for messages and map keys.
func (c Cmd) String() string {
	return strings.Join(c.Argv(), " ")
}

// Result is what a command produced. A non-zero exit status is data, not an
// error: lvm exits 5 for a missing VG and still prints a valid report.
type Result struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
}

// Err returns nil when the command exited 0 and otherwise an error naming
// the command, its exit status and the last line of its stderr (LVM prints
// its warnings first and the reason it failed last).
func (r Result) Err(c Cmd) error {
	if r.ExitCode == 0 {
		return nil
	}
	msg := strings.TrimSpace(string(r.Stderr))
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		msg = strings.TrimSpace(msg[i+1:])
	}
	return fmt.Errorf("%s: exit status %d: %s", c, r.ExitCode, msg)
}

// Runner runs commands. It returns an error only when the command could not
// run or finish (not found, timeout); exit statuses are in the Result.
type Runner interface {
	Run(ctx context.Context, c Cmd) (Result, error)
}

// LookPath returns the file ExecRunner runs for the command name: the
// first match in this process's PATH (exec.Command resolves it the same
// way).
func LookPath(name string) (string, error) { return exec.LookPath(name) }

// ExecRunner runs commands on this host with a per-command timeout, LC_ALL=C
// and LVM_SUPPRESS_FD_WARNINGS=1 in the environment. It is the only place
// keel starts a child process: probes, actions, the safe removal's LVM
// commands and the alerts hook all run through it.
type ExecRunner struct {
	// Timeout bounds each command whose Cmd sets none; zero means only the
	// caller's context.
	Timeout time.Duration
}

// Run executes c and returns its output and exit status, handing the
// output to c.Consume while c runs when it is set.
func (r ExecRunner) Run(ctx context.Context, c Cmd) (Result, error) {
	consume := c.Consume
	if c.Timeout < 0 {
		// Unbounded: neither a timeout nor the caller's cancel kills it.
		ctx = context.WithoutCancel(ctx)
	}
	if timeout := cmp.Or(c.Timeout, r.Timeout); timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, c.Name, c.Args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LVM_SUPPRESS_FD_WARNINGS=1")
	cmd.Env = append(cmd.Env, c.Env...)
	if c.Stdin != nil {
		cmd.Stdin = bytes.NewReader(c.Stdin)
	}
	cmd.WaitDelay = 2 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// Standard output goes to a file in memory where there is one
	// (outputFile), read once the command has exited, or while it runs
	// for consume (growingOutput).
	f := outputFile(c.Name)
	if f != nil {
		defer f.Close()
		cmd.Stdout = f
	}
	var err error
	res := Result{ExitCode: -1}
	if f != nil && consume != nil {
		var left bool
		res.Stdout, left, err = streamOutput(ctx, cmd, f, consume, c.ReadOnly)
		if left {
			return Result{ExitCode: -1}, fmt.Errorf("%s: %w", c, ctx.Err())
		}
	} else {
		var left bool
		if left, err = waitOrLeave(ctx, cmd, c.ReadOnly); left {
			// Nothing of cmd is read: its output may still be being
			// copied, and its exit is not known yet.
			return Result{ExitCode: -1}, fmt.Errorf("%s: %w", c, ctx.Err())
		}
		res.Stdout = out.Bytes()
		if f != nil {
			var rerr error
			if res.Stdout, rerr = readOutput(f); rerr != nil && err == nil {
				err = fmt.Errorf("reading its output: %w", rerr)
			}
		}
	}
	res.Stderr = errb.Bytes()
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("%s: %w", c, ctx.Err())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return res, fmt.Errorf("%s: %w", c, err)
	}
	if f == nil {
		c.ConsumeWhole(res.Stdout)
	}
	return res, nil
}

// waitOrLeave runs cmd to its end, as cmd.Run does; with leave, it returns
// (left true) as soon as ctx is done, while the killed process ends and is
// reaped in the background (Cmd.ReadOnly). cmd's output and ProcessState
// must not be read when it left.
func waitOrLeave(ctx context.Context, cmd *exec.Cmd, leave bool) (left bool, err error) {
	if !leave {
		return false, cmd.Run()
	}
	if err := cmd.Start(); err != nil {
		return false, err
	}
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	select {
	case err := <-ended:
		return false, err
	case <-ctx.Done():
		// exec kills the process once ctx is done (CommandContext).
	}
	select {
	case err := <-ended:
		return false, err // it ended meanwhile
	default:
	}
	if !leaveBehind() {
		return false, <-ended
	}
	go func() {
		<-ended
		leftBehind.Add(-1)
	}()
	return true, nil
}

// maxLeftBehind bounds the killed read-only commands still ending at any
// time (waitOrLeave). A command killed in a read that never completes (a
// device suspended for good, lvm stuck in exit_aio) never ends; past the
// bound, a command is waited for again, as every command was before.
const maxLeftBehind = 4

// leftBehind counts the killed read-only commands still ending.
var leftBehind atomic.Int32

// leaveBehind takes one of the maxLeftBehind places, if one is free.
func leaveBehind() bool {
	if leftBehind.Add(1) > maxLeftBehind {
		leftBehind.Add(-1)
		return false
	}
	return true
}

// streamOutput runs cmd, whose standard output is f, handing consume the
// output as it grows; it returns all of it and cmd.Wait's error once cmd
// and consume have ended. With leave, it returns as soon as ctx is done
// and consume has stopped (left true, nothing else set; Cmd.ReadOnly):
// consume's next then reports the end at once.
func streamOutput(ctx context.Context, cmd *exec.Cmd, f *os.File, consume func(next func() ([]byte, bool)), leave bool) (out []byte, left bool, err error) {
	if err := cmd.Start(); err != nil {
		return nil, false, err
	}
	ended := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(ended)
	}()
	g := &growingOutput{f: f, ended: ended}
	if leave {
		g.stop = ctx.Done()
	}
	consumed := make(chan any, 1)
	go func() {
		defer func() { consumed <- recover() }()
		consume(g.next)
	}()
	p := <-consumed
	if p == nil && leave && ctx.Err() != nil && leaveBehind() {
		go func() {
			<-ended
			leftBehind.Add(-1)
		}()
		return nil, true, nil
	}
	<-ended
	for !g.done { // consume stopped early: the Result still holds all
		g.next()
	}
	if p != nil {
		panic(p) // consume's own panic, in the caller's goroutine
	}
	if g.err != nil && waitErr == nil {
		return g.buf, false, fmt.Errorf("reading its output: %w", g.err)
	}
	return g.buf, false, waitErr
}

// readOutput returns what a command wrote to f, from its start.
func readOutput(f *os.File) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, st.Size())
	n, err := f.ReadAt(b, 0)
	if err == io.EOF && n == len(b) {
		err = nil
	}
	if n == 0 {
		return nil, err // as bytes.Buffer gives no output
	}
	return b[:n], err
}

// MissingCommand returns the name of the command that err says is not
// installed (not found in PATH, or an absolute path that does not exist),
// anywhere in err's chain or joined errors.
func MissingCommand(err error) (string, bool) {
	var ee *exec.Error
	if errors.As(err, &ee) && (errors.Is(ee.Err, exec.ErrNotFound) || errors.Is(ee.Err, fs.ErrNotExist)) {
		return ee.Name, true
	}
	return "", false
}

// Shell renders c for a person (shell.Join).
func (c Cmd) Shell() string { return shell.Join(c.Argv()) }
