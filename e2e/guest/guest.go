//go:build e2e

package guest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Flavour selects how the guest boots.
type Flavour string

const (
	// Fast boots with the whole root file system in the initramfs and a
	// small shell init; about 10 s per boot under TCG.
	Fast Flavour = "fast"
	// Systemd boots systemd as PID 1 from a persistent ext4 root disk, so
	// .deb installs, units and udev rules survive a reboot.
	Systemd Flavour = "systemd"
)

// Kind is the kind of disk the guest sees.
type Kind string

const (
	// NVMe is an emulated NVMe controller with one namespace
	// (/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_SERIAL).
	NVMe Kind = "nvme"
	// HDD is a rotational SCSI disk at 7200 rpm
	// (/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_SERIAL).
	HDD Kind = "hdd"
	// SSD is a non-rotational SCSI disk
	// (/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_SERIAL).
	SSD Kind = "ssd"
	// TrimKeep is a non-rotational SCSI disk that accepts UNMAP and keeps
	// the bytes (qemu discard=ignore): an SSD whose TRIM is a hint and
	// whose unmapped blocks need not read as zeroes (SBC LBPRZ 0, which
	// qemu's scsi-hd reports), so a discard is no way to clear it.
	// (/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_SERIAL).
	TrimKeep Kind = "trimkeep"
	// Virtio is a virtio-blk disk (/dev/disk/by-id/virtio-SERIAL).
	Virtio Kind = "vdisk"
)

// Disk is one sparse disk image attached to the guest.
type Disk struct {
	Kind Kind
	// Size is a truncate(1) size such as "20G".
	Size string
	// Serial names the disk; scenario scripts find it with `disk SERIAL`.
	Serial string
}

// Spec says what a guest needs and what runs inside it.
type Spec struct {
	// Flavour defaults to Fast.
	Flavour Flavour
	// Disks are created empty (sparse) for the machine and kept across its
	// boots. Without disks the guest gets a 20G NVMe and a 40G HDD.
	Disks []Disk
	// Script is the bash scenario of the first boot. It runs with the
	// helpers of e2e/guest-lib.sh (disk, step, versions) and the variables
	// KEEL and OUT.
	Script string
	// Files are written into the share (/mnt/host) before each boot; a name
	// may contain slashes.
	Files map[string][]byte
	// Keel puts the static keel binary in the share as $KEEL.
	Keel bool
	// Timeout bounds one boot including the scenario; default 5 minutes.
	Timeout time.Duration
	// Mem is the guest's RAM, default "2G".
	Mem string
}

// Result is what one boot produced.
type Result struct {
	// ExitCode is the scenario's exit status.
	ExitCode int
	// Output is the scenario's stdout and stderr (guest.log), preceded by
	// the versions every run logs.
	Output string
	// Console is the whole serial console of the boot.
	Console string
	// Dmesg is the guest kernel's log at the end of the scenario.
	Dmesg string
	// Journal is the systemd journal of the boot (Systemd flavour only).
	Journal string
	// Dir is the share directory of the boot; the scenario's $OUT is Dir/out.
	Dir string
	// Wall is the boot's wall time, lock wait excluded where measurable.
	Wall time.Duration
}

// File returns a file the scenario wrote to $OUT.
func (r *Result) File(name string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(r.Dir, "out", filepath.FromSlash(name)))
	if err != nil {
		return nil, fmt.Errorf("guest result file %s: %w", name, err)
	}
	return b, nil
}

// RequireOK fails the test unless the scenario exited 0, showing the tail of
// its output.
func (r *Result) RequireOK(t testing.TB) {
	t.Helper()
	if r.ExitCode != 0 {
		t.Fatalf("scenario exited %d; output tail:\n%s", r.ExitCode, tail(r.Output, 60))
	}
}

// Machine is a guest whose disks (and, for the Systemd flavour, root disk)
// persist across boots, which is how reboots are tested.
type Machine struct {
	spec    Spec
	diskDir string
	boots   int
}

// New prepares a machine for spec without booting it. Its disk images live
// in a test temporary directory and are removed with it.
func New(t testing.TB, spec Spec) *Machine {
	t.Helper()
	if spec.Flavour == "" {
		spec.Flavour = Fast
	}
	if spec.Timeout == 0 {
		spec.Timeout = 5 * time.Minute
	}
	if spec.Mem == "" {
		spec.Mem = "2G"
	}
	seen := map[string]bool{}
	for _, d := range spec.Disks {
		if d.Serial == "" || d.Size == "" {
			t.Fatalf("guest spec: disk %+v needs a size and a serial", d)
		}
		if seen[d.Serial] {
			t.Fatalf("guest spec: disk serial %s used twice", d.Serial)
		}
		seen[d.Serial] = true
	}
	return &Machine{spec: spec, diskDir: t.TempDir()}
}

// Detach leaves the disk with the given serial out of the machine's later
// boots, as if it had died; its image stays, so nothing else changes.
func (m *Machine) Detach(serial string) {
	disks := m.spec.Disks[:0:0]
	for _, d := range m.spec.Disks {
		if d.Serial != serial {
			disks = append(disks, d)
		}
	}
	m.spec.Disks = disks
}

// Run boots a fresh machine for spec once, runs spec.Script, and returns the
// result. A guest that times out, crashes or cannot start fails the test
// with the console tail; a scenario that exits non-zero does not (check
// ExitCode or call RequireOK). A guest kernel that panics while the
// scenario runs fails the test, saying so: the scenario is never run again,
// since whatever made the kernel panic (keel, the storage stack under
// test, or the emulator) would be hidden by a second run that passed.
func Run(t testing.TB, spec Spec) *Result {
	t.Helper()
	m := New(t, spec)
	r, rc, stderr := m.boot(t, spec.Script)
	return m.judge(t, r, rc, stderr)
}

// Boot boots the machine, runs script, and powers it off. Disks keep what
// earlier boots wrote.
func (m *Machine) Boot(t testing.TB, script string) *Result {
	t.Helper()
	r, rc, stderr := m.boot(t, script)
	return m.judge(t, r, rc, stderr)
}

// boot is Boot without judging the exit status: the result, vm-run.sh's
// exit status and its output.
func (m *Machine) boot(t testing.TB, script string) (*Result, int, string) {
	t.Helper()
	m.boots++
	share := filepath.Join(t.TempDir(), "share")
	if err := os.MkdirAll(share, 0o755); err != nil {
		t.Fatalf("guest share: %v", err)
	}
	for name, data := range m.spec.Files {
		p := filepath.Join(share, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatalf("guest share file %s: %v", name, err)
		}
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatalf("guest share file %s: %v", name, err)
		}
	}
	scriptPath := filepath.Join(share, ".scenario-src.sh")
	if err := os.WriteFile(scriptPath, []byte(script), 0o644); err != nil {
		t.Fatalf("guest scenario: %v", err)
	}

	args := []string{"--quiet", "--share", share, "--disk-dir", m.diskDir,
		"--flavour", string(m.spec.Flavour), "--mem", m.spec.Mem,
		"--timeout", strconv.Itoa(int(m.spec.Timeout / time.Second)),
		"--lock-wait", strconv.Itoa(int(lockWait() / time.Second))}
	for _, d := range m.spec.Disks {
		args = append(args, "--"+string(d.Kind), d.Size+":"+d.Serial)
	}
	if m.spec.Keel {
		args = append(args, "--keel", KeelBinary(t))
	}
	args = append(args, scriptPath)

	// vm-run.sh enforces the guest timeout; this deadline only guards
	// against the launcher itself hanging, lock wait included.
	limit := m.spec.Timeout + lockWait() + 2*time.Minute
	if dl, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := dl.Deadline(); ok && time.Until(d)-30*time.Second < limit {
			limit = time.Until(d) - 30*time.Second
		}
	}
	keepShare(t, share, m.boots)
	var (
		r      *Result
		rc     int
		stderr string
	)
	for attempt := 1; ; attempt++ {
		r, rc, stderr = m.launch(t, args, share, limit)
		if rc != 125 || attempt == bootAttempts || !diedBeforeScript(share) {
			break
		}
		t.Logf("guest boot %d, attempt %d: the kernel died before the scenario started (no guest.log), "+
			"a fault of the emulated boot, not of the test; booting again. Console tail:\n%s",
			m.boots, attempt, tail(r.Console, 12))
	}
	t.Logf("guest boot %d (%s): exit %d, wall %.1fs\n%s", m.boots, m.spec.Flavour, rc, r.Wall.Seconds(), r.Output)
	return r, rc, stderr
}

// judge fails t for a boot that timed out, crashed or could not start, and
// returns r with its exit status otherwise.
func (m *Machine) judge(t testing.TB, r *Result, rc int, stderr string) *Result {
	t.Helper()
	share := r.Dir
	switch rc {
	case 124:
		t.Fatalf("guest boot %d timed out after %s; console tail:\n%s", m.boots, m.spec.Timeout, tail(r.Console, 40))
	case 125:
		t.Fatalf("guest boot %d wrote no exit code: %s; console tail:\n%s", m.boots, crashCause(r.Console), tail(r.Console, 40))
	case 2:
		if _, statErr := os.Stat(filepath.Join(share, "exitcode")); statErr != nil {
			t.Fatalf("guest boot %d could not start: %s", m.boots, tail(stderr, 20))
		}
	}
	r.ExitCode = rc
	return r
}

// crashCause says why a guest that wrote no exit code stopped, from its
// serial console: the kernel's panic line when it panicked (the kernel
// prints "Kernel panic - not syncing: <reason>", kernel/panic.c), or a crash
// without a panic.
func crashCause(console string) string {
	for _, line := range strings.Split(console, "\n") {
		if _, reason, ok := strings.Cut(line, "Kernel panic - not syncing: "); ok {
			return "the guest kernel panicked (" + strings.TrimSpace(reason) + ")"
		}
	}
	return "the guest crashed or powered off without a kernel panic on its console"
}

// bootAttempts bounds the boots of one Boot call: a guest whose kernel dies
// before the scenario starts is booted again (diedBeforeScript).
const bootAttempts = 3

// diedBeforeScript reports whether a guest that wrote no exit code died before
// its scenario started: the guest's init creates guest.log as it starts the
// script (e2e/image/init, keel-e2e-run), and vm-run.sh removes it before every
// boot. Under TCG the kernel now and then dies in its first seconds (an int3
// oops in sched_clock_cpu), before anything of the test ran; the disks are as
// they were, so a new boot is the same test. A crash once the script runs
// (TestCrashedGuestFails) is never retried.
func diedBeforeScript(share string) bool {
	_, err := os.Stat(filepath.Join(share, "guest.log"))
	return errors.Is(err, fs.ErrNotExist)
}

// launch runs vm-run.sh once with args and reads what the boot left in
// share; it returns the result, vm-run.sh's exit status and its output.
func (m *Machine) launch(t testing.TB, args []string, share string, limit time.Duration) (*Result, int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(RepoRoot(t), "e2e", "vm-run.sh"), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stderr bytes.Buffer
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)

	r := &Result{Dir: share, Wall: wall}
	r.Output = readString(filepath.Join(share, "guest.log"))
	r.Console = readString(filepath.Join(share, "console.log"))
	r.Dmesg = readString(filepath.Join(share, "dmesg.txt"))
	r.Journal = readString(filepath.Join(share, "journal.txt"))
	rc := 0
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		rc = exitErr.ExitCode()
	default:
		t.Fatalf("guest boot %d: vm-run.sh: %v\n%s", m.boots, err, stderr.String())
	}
	if ctx.Err() != nil {
		t.Fatalf("guest boot %d: launcher killed after %s; console tail:\n%s", m.boots, limit, tail(r.Console, 40))
	}
	return r, rc, stderr.String()
}

// keepShare copies a boot's share (its $OUT, logs and journal) to
// $KEEL_E2E_KEEP/<test>/boot<N> when the test fails (or always, with
// KEEL_E2E_KEEP_ALL=1: a rare failure is studied beside the runs that
// passed), for a look after the temporary directories are gone.
func keepShare(t testing.TB, share string, boot int) {
	keep := os.Getenv("KEEL_E2E_KEEP")
	if keep == "" {
		return
	}
	t.Cleanup(func() {
		if !t.Failed() && os.Getenv("KEEL_E2E_KEEP_ALL") != "1" {
			return
		}
		dst := filepath.Join(keep, strings.ReplaceAll(t.Name(), "/", "_"), fmt.Sprintf("boot%d", boot))
		if err := os.CopyFS(dst, os.DirFS(share)); err != nil {
			t.Logf("KEEL_E2E_KEEP: %v", err)
			return
		}
		t.Logf("KEEL_E2E_KEEP: the share of boot %d is in %s", boot, dst)
	})
}

// lockWait is how long a boot waits for other guests on the machine: 30
// minutes, or KEEL_E2E_LOCK_WAIT (a Go duration such as 90m) where several
// people's runs share one machine.
func lockWait() time.Duration {
	if v := os.Getenv("KEEL_E2E_LOCK_WAIT"); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			return d
		}
		fmt.Fprintf(os.Stderr, "KEEL_E2E_LOCK_WAIT=%q is not a positive Go duration: waiting 30m\n", v)
	}
	return 30 * time.Minute
}

var (
	keelOnce sync.Once
	keelPath string
	keelErr  error
)

// KeelBinary returns a static keel binary, built once per test process with
// CGO_ENABLED=0 (or taken from KEEL_E2E_BIN when that is set, as
// e2e/run-e2e.sh does).
func KeelBinary(t testing.TB) string {
	t.Helper()
	keelOnce.Do(func() {
		if p := os.Getenv("KEEL_E2E_BIN"); p != "" {
			keelPath = p
			return
		}
		dir, err := os.MkdirTemp("", "keel-e2e-bin-")
		if err != nil {
			keelErr = fmt.Errorf("keel binary: %w", err)
			return
		}
		keelPath = filepath.Join(dir, "keel")
		cmd := exec.Command("go", "build", "-o", keelPath, "./cmd/keel")
		cmd.Dir = RepoRoot(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			keelErr = fmt.Errorf("keel binary: go build ./cmd/keel: %w\n%s", err, out)
		}
	})
	if keelErr != nil {
		t.Fatal(keelErr)
	}
	return keelPath
}

// RepoRoot returns the root of the keel checkout the tests were built from.
func RepoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if ok {
		root := filepath.Join(filepath.Dir(file), "..", "..")
		if _, err := os.Stat(filepath.Join(root, "e2e", "vm-run.sh")); err == nil {
			return root
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("repo root: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "e2e", "vm-run.sh")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("repo root: no e2e/vm-run.sh above the working directory")
		}
		dir = parent
	}
}

// Files lists the files the scenario wrote to $OUT, relative to it.
func (r *Result) Files() []string {
	var names []string
	root := filepath.Join(r.Dir, "out")
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(names)
	return names
}

func readString(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Deb builds keel's Debian package from the repository (packaging/
// build-deb.sh, offline) and returns its bytes, for a systemd guest to
// install with dpkg -i.
func Deb(t testing.TB) []byte {
	t.Helper()
	root := RepoRoot(t)
	build := exec.Command(filepath.Join(root, "packaging", "build-deb.sh"), t.TempDir())
	build.Dir = root
	out, err := build.CombinedOutput()
	if err != nil {
		t.Fatalf("build-deb.sh: %v\n%s", err, out)
	}
	trimmed := strings.TrimSpace(string(out))
	deb := trimmed[strings.LastIndexByte(trimmed, '\n')+1:]
	b, err := os.ReadFile(deb)
	if err != nil {
		t.Fatalf("the .deb: %v\n%s", err, out)
	}
	return b
}
