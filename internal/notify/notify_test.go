package notify

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/internal/testsock"
)

func fakeSystemd(t *testing.T) func() string {
	t.Helper()
	path, next := testsock.Listen(t)
	t.Setenv("NOTIFY_SOCKET", path)
	return func() string {
		t.Helper()
		return string(next())
	}
}

func TestNotifications(t *testing.T) {
	next := fakeSystemd(t)
	if err := Ready("converged: 3 actions,\n0 findings"); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != "READY=1\nSTATUS=converged: 3 actions, 0 findings" {
		t.Fatalf("got %q", got)
	}
	Status("1 stuck")
	if got := next(); got != "STATUS=1 stuck" {
		t.Fatalf("got %q", got)
	}
	Watchdog()
	if got := next(); got != "WATCHDOG=1" {
		t.Fatalf("got %q", got)
	}
	Reloading()
	if got := next(); !strings.HasPrefix(got, "RELOADING=1\nMONOTONIC_USEC=") {
		t.Fatalf("got %q", got)
	}
	Stopping()
	if got := next(); got != "STOPPING=1" {
		t.Fatalf("got %q", got)
	}
}

func TestOutsideSystemd(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	os.Unsetenv("NOTIFY_SOCKET")
	if err := Ready("x"); err != nil {
		t.Fatal(err)
	}
	if d := WatchdogInterval(); d != 0 {
		t.Fatalf("watchdog %v outside systemd", d)
	}
}

func TestWatchdogInterval(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "20000000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	if d := WatchdogInterval(); d != 10*time.Second {
		t.Fatalf("interval %v", d)
	}
	t.Setenv("WATCHDOG_PID", "1")
	if d := WatchdogInterval(); d != 0 {
		t.Fatalf("interval %v for another pid", d)
	}
}
