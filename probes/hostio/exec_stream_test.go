package hostio

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"
)

// TestExecRunnerStream: a command's output reaches Consume while the
// command runs, and the Result holds all of it with the exit status, also
// when Consume stops reading early.
func TestExecRunnerStream(t *testing.T) {
	ctx := context.Background()
	c := Cmd{Name: "sh", Args: []string{"-c", "printf first; sleep 0.3; printf ' second'; echo oops >&2; exit 5"}}
	var seen [][]byte
	var doneSeen bool
	start := time.Now()
	var firstAt time.Duration
	c.Consume = func(next func() ([]byte, bool)) {
		for !doneSeen {
			b, done := next()
			if len(seen) == 0 {
				firstAt = time.Since(start)
			}
			seen, doneSeen = append(seen, bytes.Clone(b)), done
		}
	}
	res, err := ExecRunner{}.Run(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "first second" || res.ExitCode != 5 || string(res.Stderr) != "oops\n" {
		t.Fatalf("Result %q exit %d stderr %q", res.Stdout, res.ExitCode, res.Stderr)
	}
	if last := seen[len(seen)-1]; string(last) != "first second" {
		t.Fatalf("the last next gave %q", last)
	}
	if outputFile("sh") != nil { // a memfd: consume sees the output grow
		if string(seen[0]) != "first" || firstAt >= 300*time.Millisecond {
			t.Fatalf("first next gave %q after %v, want \"first\" before the command's sleep ended", seen[0], firstAt)
		}
	}
	// A consume that stops after one look: the Result is still whole.
	c = Cmd{Name: "sh", Args: []string{"-c", "i=0; while [ $i -lt 3000 ]; do echo line $i; i=$((i + 1)); done"},
		Consume: func(next func() ([]byte, bool)) { next() }}
	res, err = ExecRunner{}.Run(ctx, c)
	if err != nil || res.ExitCode != 0 || bytes.Count(res.Stdout, []byte("\n")) != 3000 {
		t.Fatalf("early stop: %d lines, exit %d, %v", bytes.Count(res.Stdout, []byte("\n")), res.ExitCode, err)
	}
	// A command that cannot start: no consume, the error as Run gives it.
	called := false
	missing := Cmd{Name: "keel-test-no-such-command"}
	_, runErr := ExecRunner{}.Run(ctx, missing)
	missing.Consume = func(func() ([]byte, bool)) { called = true }
	_, err = ExecRunner{}.Run(ctx, missing)
	if _, ok := MissingCommand(err); !ok || called || fmt.Sprint(err) != fmt.Sprint(runErr) {
		t.Fatalf("missing command: %v (Run: %v), consume called %v", err, runErr, called)
	}
}

// plainWrapper is a Runner that wraps another the way most wrappers do
// (a log, a timer, a liveness count): it knows nothing of streaming.
type plainWrapper struct{ inner Runner }

func (w plainWrapper) Run(ctx context.Context, c Cmd) (Result, error) { return w.inner.Run(ctx, c) }

// TestStreamingSurvivesWrappers: a command's output reaches Consume while
// the command runs also through runners that wrap ExecRunner without
// knowing of streaming (a plain wrapper, the Recorder, the DMRunner for a
// command it does not serve), since Consume travels in the Cmd.
func TestStreamingSurvivesWrappers(t *testing.T) {
	if outputFile("sh") == nil {
		t.Skip("no memfd: output reaches Consume only once the command ended")
	}
	var r Runner = ExecRunner{}
	r = &DMRunner{Exec: r}
	r = NewRecorder(Source{Runner: r, FS: DirFS("/")}).Source().Runner
	r = plainWrapper{r}
	c := Cmd{Name: "sh", Args: []string{"-c", "printf first; sleep 0.3; printf ' second'"}}
	var first []byte
	var firstAt time.Duration
	start := time.Now()
	c.Consume = func(next func() ([]byte, bool)) {
		b, _ := next()
		first, firstAt = bytes.Clone(b), time.Since(start)
		for _, done := next(); !done; _, done = next() {
		}
	}
	res, err := r.Run(context.Background(), c)
	if err != nil || string(res.Stdout) != "first second" {
		t.Fatalf("Result %q, %v", res.Stdout, err)
	}
	if string(first) != "first" || firstAt >= 300*time.Millisecond {
		t.Fatalf("first next gave %q after %v through the wrappers, want \"first\" while the command ran", first, firstAt)
	}
}
