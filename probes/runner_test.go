package probes

import (
	"context"
	"errors"
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
