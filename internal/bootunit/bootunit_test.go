package bootunit

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/internal/testenv"
	"golang.org/x/sys/unix"
)

// SetGroupNice sets every thread of keel back to nice 0, whatever nice
// keel-activate.service started it with (Nice= applies to the process,
// and nice is per thread on Linux), and back to the unit's nice after an
// early READY.
func TestSetGroupNice(t *testing.T) {
	testenv.NeedRoot(t, "raising a priority back to nice 0")
	// A process group of its own, so that only this test binary is reniced.
	if err := unix.Setpgid(0, 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setpriority(unix.PRIO_PGRP, 0, 19); err != nil {
		t.Fatal(err)
	}
	// The tests after this one run at nice 0 whatever happens here.
	t.Cleanup(func() { _ = unix.Setpriority(unix.PRIO_PGRP, 0, 0) })
	if n := OwnNice(); n != 19 {
		t.Fatalf("started at nice 19, OwnNice says %d", n)
	}
	for _, nice := range []string{"0", "19"} {
		n, _ := strconv.Atoi(nice)
		SetGroupNice(hclog.NewNullLogger(), n)
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/stat")
			if err != nil {
				continue // the thread ended
			}
			// Field 19 is the nice value; the command name (field 2) may
			// hold spaces, so count from the closing parenthesis.
			f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
			if len(f) < 17 || f[16] != nice {
				t.Errorf("thread %s: nice %v after SetGroupNice(%s)", task.Name(), f, nice)
			}
		}
	}
}

// WaitNice lowers keel's process group to the nice asked for, as the
// group's leader, and never raises it: a process started at a lower
// priority than asked stays there.
func TestWaitNice(t *testing.T) {
	testenv.NeedRoot(t, "setting a process group's priority back to nice 0")
	if err := unix.Setpgid(0, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Setpriority(unix.PRIO_PGRP, 0, 0) })
	if err := unix.Setpriority(unix.PRIO_PGRP, 0, 0); err != nil {
		t.Fatal(err)
	}
	log := hclog.NewNullLogger()
	if n := WaitNice(log, 0); n != 0 || OwnNice() != 0 {
		t.Errorf("WaitNice(0) at nice 0: %d, now at %d; want 0", n, OwnNice())
	}
	if n := WaitNice(log, 19); n != 19 || OwnNice() != 19 {
		t.Errorf("WaitNice(19) at nice 0: %d, now at %d; want 19", n, OwnNice())
	}
	if n := WaitNice(log, 5); n != 19 || OwnNice() != 19 {
		t.Errorf("WaitNice(5) at nice 19: %d, now at %d; want 19 kept", n, OwnNice())
	}
}

// keel activate leaves its probe pass to keel.service only when systemd
// will start it: enabled (linked into multi-user.target.wants, as
// systemctl enable makes it) and not masked (linked to /dev/null in
// /etc or /run, as systemctl mask [--runtime] makes it).
func TestDaemonWillRun(t *testing.T) {
	link := func(t *testing.T, root, p, target string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	unit := func(t *testing.T, root string) string {
		t.Helper()
		p := filepath.Join(root, "usr/lib/systemd/system/keel.service")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("[Unit]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, root string)
		want  bool
	}{
		{"not enabled", func(t *testing.T, root string) { unit(t, root) }, false},
		{"enabled", func(t *testing.T, root string) {
			link(t, root, "etc/systemd/system/multi-user.target.wants/keel.service", unit(t, root))
		}, true},
		{"enabled and masked", func(t *testing.T, root string) {
			link(t, root, "etc/systemd/system/multi-user.target.wants/keel.service", unit(t, root))
			link(t, root, "etc/systemd/system/keel.service", "/dev/null")
		}, false},
		{"enabled and masked until reboot", func(t *testing.T, root string) {
			link(t, root, "etc/systemd/system/multi-user.target.wants/keel.service", unit(t, root))
			link(t, root, "run/systemd/system/keel.service", "/dev/null")
		}, false},
	} {
		root := t.TempDir()
		tc.setup(t, root)
		if got := DaemonWillRun(root); got != tc.want {
			t.Errorf("%s: DaemonWillRun %v, want %v", tc.name, got, tc.want)
		}
	}
}
