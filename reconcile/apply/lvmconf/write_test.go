package lvmconf

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/plan"
)

// okRunner answers lvmconfig --validate with success.
type okRunner struct{ validated int }

func (r *okRunner) Run(_ context.Context, c hostio.Cmd) (hostio.Result, error) {
	r.validated++
	return hostio.Result{}, nil
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A setting lvmlocal.conf assigns is written there, where it wins over
// lvm.conf; the others go to lvm.conf, and a second Apply writes nothing.
func TestApplyWritesWhereTheSettingTakesEffect(t *testing.T) {
	dir := t.TempDir()
	conf, local := filepath.Join(dir, "lvm.conf"), filepath.Join(dir, LocalName)
	writeFile(t, conf, "devices {\n\tscan_lvs = 0\n}\n")
	writeFile(t, local, "local {\n}\ndevices {\n\tscan_lvs = 0\n}\n")
	r := &okRunner{}
	w := &Writer{Path: conf, Runner: r, DpkgDir: dir}
	on := true
	if err := w.Apply(context.Background(), plan.LVMConfChange{ScanLVs: &on, UseDevicesFile: new(bool)}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, local); got != "local {\n}\ndevices {\n\tscan_lvs = 1\n}\n" {
		t.Errorf("lvmlocal.conf:\n%s\nwant scan_lvs = 1 there", got)
	}
	if got := readFile(t, conf); got != "devices {\n\tscan_lvs = 0\n\tuse_devicesfile = 0\n}\n" {
		t.Errorf("lvm.conf:\n%s\nwant scan_lvs kept (lvmlocal.conf decides it) and use_devicesfile added", got)
	}
	if r.validated != 1 {
		t.Errorf("validated %d times, want once for both candidates", r.validated)
	}
	before := readFile(t, conf) + readFile(t, local)
	if err := w.Apply(context.Background(), plan.LVMConfChange{ScanLVs: &on, UseDevicesFile: new(bool)}); err != nil {
		t.Fatal(err)
	}
	if after := readFile(t, conf) + readFile(t, local); after != before || r.validated != 1 {
		t.Errorf("second Apply changed the files or validated again (%d)", r.validated)
	}
}

// holdLockEnv makes the test binary a process that holds an fcntl write
// lock on the file it names, as dpkg does, until its stdin closes.
const holdLockEnv = "KEEL_TEST_HOLD_FCNTL_LOCK"

func TestMain(m *testing.M) {
	if p := os.Getenv(holdLockEnv); p != "" {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o640)
		if err == nil {
			lk := syscall.Flock_t{Type: syscall.F_WRLCK}
			err = syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk)
		}
		if err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("locked\n")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// While another process holds dpkg's frontend lock nothing is written and
// the error says why; once it lets go the same Apply writes.
func TestApplyWaitsForDpkgLock(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "lvm.conf")
	writeFile(t, conf, "devices {\n\tscan_lvs = 0\n}\n")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdLockEnv+"="+filepath.Join(dir, "lock-frontend"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "locked\n" {
		t.Fatalf("lock holder: %q", line)
	}
	w := &Writer{Path: conf, Runner: &okRunner{}, DpkgDir: dir}
	on := true
	err = w.Apply(context.Background(), plan.LVMConfChange{ScanLVs: &on})
	if !errors.Is(err, ErrDpkgLocked) || !strings.Contains(err.Error(), "lock-frontend") {
		t.Errorf("Apply while dpkg's lock is held: %v, want ErrDpkgLocked naming lock-frontend", err)
	}
	if got := readFile(t, conf); !strings.Contains(got, "scan_lvs = 0") {
		t.Errorf("lvm.conf written while dpkg held its lock:\n%s", got)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := w.Apply(context.Background(), plan.LVMConfChange{ScanLVs: &on}); err != nil {
		t.Fatalf("Apply after dpkg let go: %v", err)
	}
	if got := readFile(t, conf); !strings.Contains(got, "scan_lvs = 1") {
		t.Errorf("lvm.conf not written once the lock was free:\n%s", got)
	}
}
