package hostio

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestExecRunner(t *testing.T) {
	ctx := context.Background()
	c := Cmd{Name: "sh", Args: []string{"-c", "echo first >&2; echo 'no such LV' >&2; exit 5"}}
	res, err := ExecRunner{}.Run(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(c); err == nil || !strings.Contains(err.Error(), "exit status 5: no such LV") {
		t.Fatalf("Err = %v, want the last stderr line", err)
	}
	c = Cmd{Name: "sh", Args: []string{"-c", `read line; echo "$line $KEEL_X $LC_ALL"`}, Env: []string{"KEEL_X=x"}, Stdin: []byte("in\n")}
	if res, err = (ExecRunner{}).Run(ctx, c); err != nil || string(res.Stdout) != "in x C\n" || res.Err(c) != nil {
		t.Fatalf("stdin and env: %q, %v", res.Stdout, err)
	}
	// More output than a pipe holds, beside stderr and a failing exit: all
	// of it, in order, whether it went to a file in memory or a pipe.
	c = Cmd{Name: "sh", Args: []string{"-c", `i=0; while [ $i -lt 20000 ]; do echo "line $i"; i=$((i + 1)); done; echo err >&2; exit 3`}}
	res, err = ExecRunner{}.Run(ctx, c)
	var want strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if err != nil || string(res.Stdout) != want.String() || string(res.Stderr) != "err\n" || res.ExitCode != 3 {
		t.Fatalf("large output: %d bytes (want %d), stderr %q, exit %d, %v", len(res.Stdout), want.Len(), res.Stderr, res.ExitCode, err)
	}
	if res, err = (ExecRunner{}).Run(ctx, Cmd{Name: "true"}); err != nil || res.Stdout != nil || res.ExitCode != 0 {
		t.Fatalf("no output: %q, exit %d, %v", res.Stdout, res.ExitCode, err)
	}
	c = Cmd{Name: "sleep", Args: []string{"5"}, Timeout: 50 * time.Millisecond}
	start := time.Now()
	if _, err = (ExecRunner{Timeout: time.Minute}).Run(ctx, c); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 4*time.Second {
		t.Fatalf("the command's own timeout: %v after %s", err, time.Since(start))
	}
	if _, err = (ExecRunner{}).Run(ctx, Cmd{Name: "keel-no-such-program"}); err == nil {
		t.Fatal("a missing program ran")
	}
}

// TestExecRunnerLeavesReadOnly: a read-only command whose context ends is
// left to end on its own, and Run returns at once; any other command is
// waited for. The command here ends slowly once killed because a child it
// left holds its stderr (exec then waits up to WaitDelay, 2 s), as lvm
// does when killed with a read in flight on a slow device: it ends only
// when the read completes (e2e/underfire: 5 s per I/O).
func TestExecRunnerLeavesReadOnly(t *testing.T) {
	// Each command appends a line to its marker file once the child that
	// holds stderr runs: cancelled before that, the shell would end at
	// once (nothing holds the pipe) and a waited-for command would look
	// left behind (seen under CI load).
	slow := func(marker string, readOnly bool) Cmd {
		return Cmd{Name: "sh", Args: []string{"-c", `sleep 3 & echo x >>"$0"; exec sleep 3`, marker}, ReadOnly: readOnly}
	}
	waitStarted := func(marker string, n int) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if b, _ := os.ReadFile(marker); strings.Count(string(b), "x") == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the %d commands did not all start", n)
			}
		}
	}
	run := func(readOnly, stream bool) (time.Duration, error) {
		marker := filepath.Join(t.TempDir(), "started")
		c := slow(marker, readOnly)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if stream {
			c.Consume = func(next func() ([]byte, bool)) {
				for _, done := next(); !done; _, done = next() {
				}
			}
		}
		type ended struct {
			at  time.Time
			err error
		}
		ends := make(chan ended, 1)
		go func() {
			_, err := ExecRunner{}.Run(ctx, c)
			ends <- ended{time.Now(), err}
		}()
		waitStarted(marker, 1)
		cancelled := time.Now()
		cancel()
		e := <-ends
		return e.at.Sub(cancelled), e.err
	}
	for _, stream := range []bool{false, true} {
		took, err := run(true, stream)
		if !errors.Is(err, context.Canceled) || took > 1500*time.Millisecond {
			t.Errorf("read-only (stream %v): %v after %s, want context.Canceled at once", stream, err, took)
		}
		took, err = run(false, stream)
		if !errors.Is(err, context.Canceled) || took < 2*time.Second {
			t.Errorf("not read-only (stream %v): %v after %s, want it waited for (WaitDelay 2 s)", stream, err, took)
		}
	}
	// At most maxLeftBehind are left ending at a time; past that, a
	// command is waited for as before.
	for deadline := time.Now().Add(10 * time.Second); leftBehind.Load() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d commands left behind did not end", leftBehind.Load())
		}
	}
	// maxLeftBehind+1 commands cancelled together, once every one has
	// started.
	const n = maxLeftBehind + 1
	started := filepath.Join(t.TempDir(), "started")
	together := slow(started, true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ends := make(chan time.Time, n)
	for range n {
		go func() {
			ExecRunner{}.Run(ctx, together)
			ends <- time.Now()
		}()
	}
	waitStarted(started, n)
	cancelled := time.Now()
	cancel()
	waited := 0
	for range n {
		if (<-ends).Sub(cancelled) >= 1500*time.Millisecond {
			waited++
		}
	}
	if waited != 1 {
		t.Errorf("%d of %d read-only commands cancelled together were waited for, want 1 (maxLeftBehind %d)", waited, n, maxLeftBehind)
	}
	// A read-only command that ends before its context does is whole.
	res, err := ExecRunner{}.Run(context.Background(), Cmd{Name: "sh", Args: []string{"-c", "echo out; echo err >&2; exit 4"}, ReadOnly: true})
	if err != nil || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" || res.ExitCode != 4 {
		t.Fatalf("read-only, not cancelled: %q %q exit %d, %v", res.Stdout, res.Stderr, res.ExitCode, err)
	}
}
