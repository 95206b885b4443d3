//go:build e2e

package guest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestHarness proves the harness plumbing on a real boot: disks appear by
// serial with the right rotational flag, files reach the guest, $OUT comes
// back, and the scenario's exit status is returned.
func TestHarness(t *testing.T) {
	r := Run(t, Spec{
		Disks: []Disk{{Kind: NVMe, Size: "8G", Serial: "nvme0"}, {Kind: HDD, Size: "8G", Serial: "hdd1"},
			{Kind: SSD, Size: "4G", Serial: "ssd2"}},
		Files: map[string][]byte{"in/hello.txt": []byte("from the host\n")},
		Script: `
for s in nvme0 hdd1 ssd2; do
	dev=$(readlink -f "$(disk $s)") || exit 10
	echo "$s $dev rotational=$(cat /sys/block/$(basename $dev)/queue/rotational)"
done | tee "$OUT/disks.txt"
cat /mnt/host/in/hello.txt > "$OUT/echo.txt"
exit 3
`,
	})
	if r.ExitCode != 3 {
		t.Fatalf("exit code %d, want 3 (the scenario's own status)", r.ExitCode)
	}
	if got, err := r.File("echo.txt"); err != nil || string(got) != "from the host\n" {
		t.Fatalf("echo.txt = %q, %v", got, err)
	}
	disks, err := r.File("disks.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"nvme0": "/dev/nvme0n1 rotational=0", "hdd1": "rotational=1", "ssd2": "rotational=0"}
	for serial, frag := range want {
		found := false
		for _, line := range strings.Split(string(disks), "\n") {
			if strings.HasPrefix(line, serial+" ") && strings.Contains(line, frag) {
				found = true
			}
		}
		if !found {
			t.Errorf("disk %s: no line with %q in\n%s", serial, frag, disks)
		}
	}
	if !strings.Contains(r.Output, "kernel: 6.") || !strings.Contains(r.Output, "dm target: vdo") {
		t.Errorf("versions missing from the output:\n%s", r.Output)
	}
	if !strings.Contains(r.Dmesg, "Linux version") {
		t.Errorf("dmesg.txt has no kernel banner")
	}
}

// TestHungGuestFails shows that a scenario that never ends is cut off by the
// hard timeout and reported as such, not waited for.
func TestHungGuestFails(t *testing.T) {
	start := time.Now()
	msg := runFailing(t, Spec{Timeout: 30 * time.Second, Script: "echo going to sleep; sleep 3600"})
	if !strings.Contains(msg, "timed out") {
		t.Fatalf("failure message %q does not say timed out", msg)
	}
	if took := time.Since(start); took > 3*time.Minute {
		t.Fatalf("the timeout took %s to fire", took)
	}
	t.Logf("hung guest reported after %.1fs: %s", time.Since(start).Seconds(), firstLine(msg))
}

// TestCrashedGuestFails shows that a guest that dies before writing its exit
// code (here a kernel panic: panic=-1 reboots and qemu runs with -no-reboot)
// fails the test as a panic, not as a timeout and not as a pass, and is not
// run again.
func TestCrashedGuestFails(t *testing.T) {
	msg := runFailing(t, Spec{Timeout: 2 * time.Minute, Script: "echo crashing the kernel; echo c >/proc/sysrq-trigger; sleep 600"})
	if !strings.Contains(msg, "wrote no exit code") || !strings.Contains(msg, "the guest kernel panicked (sysrq triggered crash)") {
		t.Fatalf("failure message %q does not say the guest kernel panicked and wrote no exit code", firstLine(msg))
	}
	t.Logf("crashed guest reported: %s", firstLine(msg))
}

// runFailing runs spec with a recorder in place of t and returns the
// harness's failure message; it fails t when the harness did not fail.
func runFailing(t *testing.T, spec Spec) string {
	t.Helper()
	ft := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ft, spec)
	}()
	<-done
	if !ft.failed {
		t.Fatalf("the guest (%q) did not fail the test", spec.Script)
	}
	return ft.msg
}

// fatalRecorder records Fatalf instead of failing, so a test can check that
// the harness fails a hung guest.
type fatalRecorder struct {
	testing.TB
	failed bool
	msg    string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.failed = true
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fatalRecorder) Fatal(args ...any) {
	f.failed = true
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// A guest is booted again only when its kernel died before the scenario
// started: vm-run.sh removes guest.log before every boot and the guest's
// init creates it as the script starts, even if the script prints nothing.
func TestDiedBeforeScript(t *testing.T) {
	share := t.TempDir()
	if !diedBeforeScript(share) {
		t.Error("no guest.log: want died before the script")
	}
	if err := os.WriteFile(filepath.Join(share, "guest.log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if diedBeforeScript(share) {
		t.Error("an empty guest.log: the script started, want no second boot")
	}
}

// A panic names itself in the failure, whatever its reason: an exception
// in interrupt context, which TCG has caused now and then, fails the test
// as any other panic does, since a second run would hide one keel caused.
func TestCrashCause(t *testing.T) {
	for console, want := range map[string]string{
		"[   12.849556] Kernel panic - not syncing: Fatal exception in interrupt\n": "the guest kernel panicked (Fatal exception in interrupt)",
		"[    9.1] Kernel panic - not syncing: sysrq triggered crash\n":             "the guest kernel panicked (sysrq triggered crash)",
		"[    3.2] reboot: Power down\n":                                            "the guest crashed or powered off without a kernel panic on its console",
	} {
		if got := crashCause(console); got != want {
			t.Errorf("crashCause(%q) = %q, want %q", console, got, want)
		}
	}
}

// Mutating judges a command by its program's base name, after an env
// prefix, and knows the read-only forms of dmsetup and udevadm.
func TestMutating(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want bool
	}{
		{[]string{"lvs", "--reportformat", "json"}, false},
		{[]string{"lvm", "fullreport"}, false},
		{[]string{"lvcreate", "-L", "4M", "vg"}, true},
		{[]string{"/usr/sbin/lvcreate", "-L", "4M", "vg"}, true},
		{[]string{"/sbin/lvm", "lvremove", "vg/lv"}, true},
		{[]string{"lvm", "lvreduce", "-L", "4M", "vg/lv"}, true},
		{[]string{"vgremove", "vg"}, true},
		{[]string{"pvremove", "/dev/sdb"}, true},
		{[]string{"/bin/dd", "if=/dev/zero", "of=/dev/vg/lv"}, true},
		{[]string{"pvscan", "--cache", "/dev/dm-3"}, true},
		{[]string{"env", "LVM_SYSTEM_DIR=/tmp/x", "lvmconfig", "--validate"}, false},
		{[]string{"env", "LVM_SYSTEM_DIR=/tmp/x", "lvchange", "-an", "vg/lv"}, true},
		{[]string{"dmsetup", "table"}, false},
		{[]string{"/sbin/dmsetup", "status", "vg-pool"}, false},
		{[]string{"dmsetup", "message", "vg-pool", "0", "stats"}, false},
		{[]string{"dmsetup", "message", "vg-pool", "0", "compression", "on"}, true},
		{[]string{"dmsetup", "resume", "vg-lv"}, true},
		{[]string{"/usr/sbin/dmsetup", "remove", "vg-lv"}, true},
		{[]string{"udevadm", "control", "--reload", "--timeout=5"}, true},
		{[]string{"udevadm", "trigger", "/dev/sdb"}, true},
		{[]string{"udevadm", "settle", "--timeout=3"}, false},
		{[]string{"/bin/udevadm", "info", "/dev/sdb"}, false},
		{nil, false},
	} {
		if got := Mutating(c.argv); got != c.want {
			t.Errorf("Mutating(%q) = %v, want %v", c.argv, got, c.want)
		}
	}
}
