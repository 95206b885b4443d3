package bootwatch

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keel-storage/keel/probes/hostio"
)

// WaitForLVM waits while lvm2's own autoactivation runs for a declared VG,
// and only then: an undeclared VG's, or one past the deadline, holds
// nothing. The clock is synctest's.
func TestActivateWaitsForLVMAutoactivation(t *testing.T) {
	synctest.Test(t, testActivateWaitsForLVMAutoactivation)
}

func testActivateWaitsForLVMAutoactivation(t *testing.T) {
	dir, root := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "d.cue"), []byte("volumeGroups: vdovg: pvs: [\"/dev/sdb\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	proc := func(pid, cmdline string) string {
		d := filepath.Join(root, "proc", pid)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "cmdline"), []byte(cmdline), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	w := watchOn(t, dir, hostio.Source{Runner: failingRunner{}, FS: hostio.DirFS(root)})
	wait := func(deadline time.Duration) (time.Duration, [][]string) {
		var told [][]string
		start := time.Now()
		w.WaitForLVM(context.Background(), start.Add(deadline), func(vgs []string) { told = append(told, vgs) }, nil)
		return time.Since(start), told
	}

	proc("500", "/usr/sbin/lvm\x00vgchange\x00-aay\x00--autoactivation\x00event\x00othervg\x00")
	if took, told := wait(time.Minute); took != 0 || told != nil {
		t.Errorf("an undeclared VG's activation held keel %v (told %q)", took, told)
	}

	busy := proc("412", "/usr/sbin/lvm\x00vgchange\x00-aay\x00--autoactivation\x00event\x00vdovg\x00")
	if took, told := wait(0); took != 0 || len(told) != 1 {
		t.Errorf("past the deadline: waited %v, told %q", took, told)
	}
	go func() {
		time.Sleep(510 * time.Millisecond)
		os.RemoveAll(busy)
	}()
	took, told := wait(time.Minute)
	if took != 525*time.Millisecond || len(told) != 2 || !slices.Equal(told[0], []string{"vdovg"}) || told[1] != nil {
		t.Errorf("waited %v for lvm2's activation of vdovg (ended after 510ms, looked at every %v), told %q", took, lvmActivationTick, told)
	}
}

// Between lvm2's activation of a VG and that of the VG stacked on its LV
// no process of lvm2's runs, but udev's queue holds the new LV's uevents:
// keel waits for both activations, and for udev's queue no longer than
// udevSettleMax. The clock is synctest's.
func TestActivateWaitsForStackedAutoactivation(t *testing.T) {
	synctest.Test(t, testActivateWaitsForStackedAutoactivation)
}

func testActivateWaitsForStackedAutoactivation(t *testing.T) {
	dir, root := t.TempDir(), t.TempDir()
	desired := "volumeGroups: {\n\tvdosplit: pvs: [\"/dev/sdb\"]\n\tvdovg: pvs: [\"/dev/sdc\"]\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "d.cue"), []byte(desired), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) string {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	activation := func(pid, vg string) string {
		return filepath.Dir(write("proc/"+pid+"/cmdline", "/usr/sbin/lvm\x00vgchange\x00-aay\x00--autoactivation\x00event\x00"+vg+"\x00"))
	}
	w := watchOn(t, dir, hostio.Source{Runner: failingRunner{}, FS: hostio.DirFS(root)})
	var starts int // the activations keel saw start during the last wait
	wait := func() (time.Duration, [][]string) {
		var told [][]string
		start := time.Now()
		starts = 0
		w.WaitForLVM(context.Background(), start.Add(time.Minute), func(vgs []string) { told = append(told, vgs) }, func() { starts++ })
		return time.Since(start), told
	}
	at := func(d time.Duration, f func()) {
		go func() {
			time.Sleep(d)
			f()
		}()
	}

	lower := activation("300", "vdosplit")
	queue := write("run/udev/queue", "")
	at(310*time.Millisecond, func() { os.RemoveAll(lower) })
	at(410*time.Millisecond, func() { activation("301", "vdovg") })
	at(420*time.Millisecond, func() { os.Remove(queue) })
	at(910*time.Millisecond, func() { os.RemoveAll(filepath.Join(root, "proc", "301")) })
	took, told := wait()
	if took != 925*time.Millisecond || len(told) != 2 || !slices.Equal(told[0], []string{"vdosplit"}) || told[1] != nil {
		t.Errorf("vdosplit's activation ended at 310ms, udev started vdovg's at 410ms, which ended at 910ms: waited %v, told %q", took, told)
	}
	if starts != 2 {
		t.Errorf("started called %d times for the activations of vdosplit and then vdovg; want 2", starts)
	}

	// systemd has started lvm-activate-vdovg.service (its cgroup is
	// there) but its process is still systemd's executor when vdosplit's
	// vgchange ends and udev is done: keel waits for the unit.
	lower2 := activation("302", "vdosplit")
	unit := filepath.Join(root, "sys/fs/cgroup/system.slice/lvm-activate-vdovg.service")
	if err := os.MkdirAll(unit, 0o755); err != nil {
		t.Fatal(err)
	}
	write("sys/fs/cgroup/system.slice/cgroup.procs", "")
	write("proc/303/cmdline", "/usr/lib/systemd/systemd-executor\x00--deserialize\x0046\x00")
	at(110*time.Millisecond, func() { os.RemoveAll(lower2) })
	at(610*time.Millisecond, func() { os.RemoveAll(unit) })
	took, told = wait()
	if took != 625*time.Millisecond || len(told) != 2 || !slices.Equal(told[0], []string{"vdosplit", "vdovg"}) || told[1] != nil {
		t.Errorf("vdovg's unit started, its process not yet vgchange, until 610ms: waited %v, told %q", took, told)
	}
	os.RemoveAll(filepath.Join(root, "proc", "303"))

	// vdovg's vgchange exits at 510ms and systemd removes its unit's
	// cgroup at 710ms: keel ends its wait when the cgroup is empty.
	exiting := filepath.Join(root, "sys/fs/cgroup/system.slice/lvm-activate-vdovg.service")
	write("sys/fs/cgroup/system.slice/lvm-activate-vdovg.service/cgroup.procs", "")
	at(10*time.Millisecond, func() {
		write("sys/fs/cgroup/system.slice/lvm-activate-vdovg.service/cgroup.procs", "304\n")
		activation("304", "vdovg")
	})
	at(510*time.Millisecond, func() {
		os.RemoveAll(filepath.Join(root, "proc", "304"))
		write("sys/fs/cgroup/system.slice/lvm-activate-vdovg.service/cgroup.procs", "")
	})
	at(710*time.Millisecond, func() { os.RemoveAll(exiting) })
	took, told = wait()
	if took != 525*time.Millisecond || len(told) != 2 || !slices.Equal(told[0], []string{"vdovg"}) || told[1] != nil {
		t.Errorf("vdovg's vgchange exited at 510ms, its cgroup went at 710ms: waited %v, told %q", took, told)
	}
	if starts != 1 {
		t.Errorf("started called %d times for one activation of vdovg; want 1", starts)
	}
	time.Sleep(200 * time.Millisecond) // past the cgroup's removal

	// A queue that stays busy, and no activation: keel waits udevSettleMax.
	write("run/udev/queue", "")
	if took, told := wait(); took != udevSettleMax || told != nil {
		t.Errorf("udev busy and lvm2 activating nothing: waited %v, told %q; want %v", took, told, udevSettleMax)
	}
}
