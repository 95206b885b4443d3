package probes

import (
	"context"
	"errors"
	"fmt"
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

type panickingRunner struct{}

func (panickingRunner) Run(context.Context, Cmd) (Result, error) { panic("injected") }

// A panic in a probe goroutine fails the pass with an error naming the
// command; it does not end the process.
func TestProbeCatchesPanics(t *testing.T) {
	_, err := Probe(context.Background(), Source{Runner: panickingRunner{}, FS: DirFS(t.TempDir())})
	if err == nil || !strings.Contains(err.Error(), "lvm fullreport") || !strings.Contains(err.Error(), "panic: injected") {
		t.Fatalf("Probe: %v", err)
	}
}
