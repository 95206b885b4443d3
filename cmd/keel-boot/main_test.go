package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/internal/desiredcache"
	"github.com/keel-storage/keel/internal/notify"
	_ "github.com/keel-storage/keel/internal/testenv"
	"github.com/keel-storage/keel/reconcile/converge"
	"github.com/keel-storage/keel/reconcile/converge/convergetest"
	"github.com/keel-storage/keel/schema"
	"github.com/keel-storage/keel/schema/desiredfiles"
)

// The node captured in the guest right after lvm2's own vgchange -aay
// (reconcile/activation/testdata/autoactivation.txtar), and desired states
// of its three VGs: all up, or with a fourth whose disk is not there.
const (
	capture = "../../reconcile/activation/testdata/autoactivation.txtar"
	disks   = "volumeGroups: {\n\tpve: pvs: [\"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd1\"]\n" +
		"\toffvg: pvs: [\"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd2\"]\n" +
		"\tlistvg: pvs: [\"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd3\"]\n"
	upState    = disks + "}\n"
	ghostState = disks + "\tghost: pvs: [\"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_none\"]\n}\n"
)

// fixture is a host for keel-boot: a file root where keel.service is
// enabled, a desired state in etc, keel's binary (this test's, for its Go
// build ID) and its state directory, the captured node, and what keel-boot
// told systemd, printed and exec'd.
type fixture struct {
	h      host
	etc    string
	sent   []string
	execd  [][]string
	stdout *bytes.Buffer
	stderr *bytes.Buffer
}

func newFixture(t *testing.T, desired string) *fixture {
	t.Helper()
	root, etc, state := t.TempDir(), t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	unit := filepath.Join(root, "usr/lib/systemd/system/keel.service")
	wants := filepath.Join(root, "etc/systemd/system/multi-user.target.wants/keel.service")
	must(os.MkdirAll(filepath.Dir(unit), 0o755))
	must(os.WriteFile(unit, []byte("[Unit]\n"), 0o644))
	must(os.MkdirAll(filepath.Dir(wants), 0o755))
	must(os.Symlink(unit, wants))
	must(os.Chmod(etc, 0o755))
	must(os.WriteFile(filepath.Join(etc, "keel.cue"), []byte(desired), 0o644))
	must(os.Chmod(filepath.Join(etc, "keel.cue"), 0o644))
	exe, err := os.Executable()
	must(err)
	src, _, _ := convergetest.Replayed(t, capture)
	f := &fixture{etc: etc, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	f.h = host{root: root, keel: exe, stateDir: state, euid: os.Geteuid(), src: &src,
		stdout: f.stdout, stderr: f.stderr,
		notify: notify.Sender{Send: func(s string) error { f.sent = append(f.sent, s); return nil }},
		exec: func(argv []string) error {
			f.execd = append(f.execd, argv)
			return os.ErrPermission
		}}
	return f
}

// cache puts the desired state in etc into keel's desired-state cache, as
// keel does when it loads it.
func (f *fixture) cache(t *testing.T) {
	t.Helper()
	files, err := desiredfiles.Read(f.etc)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := schema.NewLoader().LoadConfig(files)
	if err != nil {
		t.Fatal(err)
	}
	id, err := desiredcache.BuildID(f.h.keel)
	if err != nil {
		t.Fatal(err)
	}
	if err := desiredcache.New(filepath.Join(f.h.stateDir, desiredcache.StateSubdir), id).Put(files, cfg); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) run(args ...string) int {
	return f.h.run(context.Background(), time.Now(), args)
}

// With keel's cached desired state, keel.service enabled and lvm2's
// activation done, keel-boot confirms the stack, tells READY and ends:
// keel is not started.
func TestFastPathTellsReady(t *testing.T) {
	f := newFixture(t, upState)
	f.cache(t)
	// As the unit runs it. The test binary does not lead its process
	// group, so --wait-nice changes nothing here (bootunit's tests).
	code := f.run("-c", f.etc, "--timeout", "2m", "--leave-pass-to-daemon", "--wait-nice", "19")
	if code != 0 || len(f.execd) != 0 {
		t.Fatalf("exit %d, exec'd %q; want 0 and no exec\nstderr: %s", code, f.execd, f.stderr)
	}
	want := "active   vg pve\nactive   vg offvg\nactive   vg listvg\n"
	if got := f.stdout.String(); !sameLines(got, want) {
		t.Errorf("printed %q, want the lines of %q", got, want)
	}
	ready := 0
	for _, s := range f.sent {
		if strings.HasPrefix(s, "READY=1\n") {
			ready++
		}
	}
	if ready == 0 {
		t.Errorf("told systemd %q, no READY", f.sent)
	}
}

// Every case outside the fast path goes to keel activate, with the flags
// as given: keel-boot never decides what it has not the code for.
func TestHandsOverToKeelActivate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, f *fixture)
		args  func(f *fixture) []string
	}{
		{"desired state not in the cache", func(*testing.T, *fixture) {}, nil},
		{"desired state changed since keel cached it", func(t *testing.T, f *fixture) {
			f.cache(t)
			if err := os.WriteFile(filepath.Join(f.etc, "keel.cue"), []byte(upState+"// edited\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"keel upgraded since", func(t *testing.T, f *fixture) {
			f.cache(t)
			other := filepath.Join(t.TempDir(), "keel")
			if err := os.WriteFile(other, []byte("not an ELF file"), 0o755); err != nil {
				t.Fatal(err)
			}
			f.h.keel = other
		}, nil},
		{"a declared VG not active", func(t *testing.T, f *fixture) {
			if err := os.WriteFile(filepath.Join(f.etc, "keel.cue"), []byte(ghostState), 0o644); err != nil {
				t.Fatal(err)
			}
			f.cache(t)
		}, nil},
		{"keel.service not enabled", func(t *testing.T, f *fixture) {
			f.cache(t)
			if err := os.Remove(filepath.Join(f.h.root, "etc/systemd/system/multi-user.target.wants/keel.service")); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"not root", func(t *testing.T, f *fixture) { f.cache(t); f.h.notRoot = true }, nil},
		{"cache off", func(t *testing.T, f *fixture) { f.cache(t); f.h.cacheDir = desiredcache.Off }, nil},
		{"without --leave-pass-to-daemon", func(t *testing.T, f *fixture) { f.cache(t) },
			func(f *fixture) []string { return []string{"-c", f.etc, "--timeout", "2m"} }},
		{"--node", func(t *testing.T, f *fixture) { f.cache(t) },
			func(f *fixture) []string { return []string{"-c", f.etc, "--node", "n.txtar", "--leave-pass-to-daemon"} }},
		{"a flag keel-boot does not know", func(t *testing.T, f *fixture) { f.cache(t) },
			func(f *fixture) []string { return []string{"-c", f.etc, "--leave-pass-to-daemon", "--new-flag"} }},
		{"--wait-nice out of range", func(t *testing.T, f *fixture) { f.cache(t) },
			func(f *fixture) []string { return []string{"-c", f.etc, "--leave-pass-to-daemon", "--wait-nice", "20"} }},
		{"--help", func(t *testing.T, f *fixture) { f.cache(t) },
			func(*fixture) []string { return []string{"--help"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, upState)
			tc.setup(t, f)
			args := []string{"-c", f.etc, "--timeout", "2m", "--leave-pass-to-daemon"}
			if tc.args != nil {
				args = tc.args(f)
			}
			code := f.run(args...)
			want := append([]string{f.h.keel, "activate"}, args...)
			if len(f.execd) != 1 || !slices.Equal(f.execd[0], want) {
				t.Fatalf("exec'd %q, want once %q", f.execd, want)
			}
			if code != 2 || !strings.Contains(f.stderr.String(), "keel-boot: ") {
				t.Errorf("exec failed: exit %d, stderr %q; want 2 and the reason", code, f.stderr)
			}
			for _, s := range f.sent {
				if strings.HasPrefix(s, "READY=1") {
					t.Errorf("told READY before handing over: %q", f.sent)
				}
			}
		})
	}
}

// A hand-over after time spent waiting cuts keel activate's --timeout by
// that time, so that the guests wait no longer than the bound in all.
func TestHandOverKeepsTheBound(t *testing.T) {
	f := newFixture(t, upState)
	args := []string{"--timeout", "2m", "--leave-pass-to-daemon"}
	f.h.handOver(args, time.Now().Add(-30*time.Second), 2*time.Minute, "test")
	want := append([]string{f.h.keel, "activate"}, append(args, "--timeout=1m30s")...)
	if len(f.execd) != 1 || !slices.Equal(f.execd[0], want) {
		t.Errorf("exec'd %q, want %q", f.execd, want)
	}
}

// keel-boot looks for keel's cache where keel keeps it.
func TestKeelsStateDir(t *testing.T) {
	if defaultStateDir != converge.DefaultStateDir {
		t.Errorf("keel-boot reads %s, keel writes %s", defaultStateDir, converge.DefaultStateDir)
	}
}

func sameLines(a, b string) bool {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}
