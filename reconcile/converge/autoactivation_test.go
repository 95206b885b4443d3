package converge

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/apply/executor"
	"github.com/keel-storage/keel/reconcile/converge/convergetest"
)

// Activate waits while lvm2's own autoactivation runs for a declared VG,
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
	l := New([]string{dir}, Wiring{Source: hostio.Source{Runner: failingRunner{}, FS: hostio.DirFS(root)}, SkipOwnerCheck: true})
	if err := l.Load(l.Read()); err != nil {
		t.Fatal(err)
	}
	wait := func(deadline time.Duration) (time.Duration, [][]string) {
		var told [][]string
		start := time.Now()
		l.waitForLVMActivation(context.Background(), ActivateOptions{Deadline: start.Add(deadline),
			LVMActivating: func(vgs []string) { told = append(told, vgs) }}, false)
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
	l := New([]string{dir}, Wiring{Source: hostio.Source{Runner: failingRunner{}, FS: hostio.DirFS(root)}, SkipOwnerCheck: true})
	if err := l.Load(l.Read()); err != nil {
		t.Fatal(err)
	}
	wait := func() (time.Duration, [][]string) {
		var told [][]string
		start := time.Now()
		l.waitForLVMActivation(context.Background(), ActivateOptions{Deadline: start.Add(time.Minute),
			LVMActivating: func(vgs []string) { told = append(told, vgs) }}, false)
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

	// A queue that stays busy, and no activation: keel waits udevSettleMax.
	write("run/udev/queue", "")
	if took, told := wait(); took != udevSettleMax || told != nil {
		t.Errorf("udev busy and lvm2 activating nothing: waited %v, told %q; want %v", took, told, udevSettleMax)
	}
}

// procFS serves lvm2's activation processes, its units' cgroups and udev's
// queue from a directory, and the rest of the host from a replay.
type procFS struct {
	hostio.FS
	dir hostio.DirFS
}

func (f procFS) local(name string) bool {
	return name == "/proc" || strings.HasPrefix(name, "/proc/") && len(name) > 6 && name[6] >= '0' && name[6] <= '9' ||
		strings.HasPrefix(name, "/sys/fs/cgroup/") || name == "/run/udev/queue"
}

func (f procFS) ReadFile(name string) ([]byte, error) {
	if f.local(name) {
		return f.dir.ReadFile(name)
	}
	return f.FS.ReadFile(name)
}

func (f procFS) ReadDir(name string) ([]string, error) {
	if f.local(name) {
		return f.dir.ReadDir(name)
	}
	return f.FS.ReadDir(name)
}

// reportTimes records when each LVM report of a probe starts.
type reportTimes struct {
	hostio.Runner
	start time.Time
	mu    sync.Mutex
	at    []time.Duration
}

func (r *reportTimes) Run(ctx context.Context, c hostio.Cmd) (hostio.Result, error) {
	if c.Name == "lvm" && len(c.Args) > 0 && c.Args[0] == "fullreport" {
		r.mu.Lock()
		r.at = append(r.at, time.Since(r.start))
		r.mu.Unlock()
	}
	return r.Runner.Run(ctx, c)
}

// Once lvm2's activation of every declared VG has started, keel activate
// probes beside the last one instead of after it, and takes that probe
// only when it shows the stack up; otherwise it waits for lvm2 to end and
// probes again. A VG whose activation keel did not see start, or a unit
// whose process is not vgchange yet, keeps the wait as before. The clock
// is synctest's; the host is the VDO-on-bcache node captured in the guest.
func TestActivateProbesBesideLVMsLastActivation(t *testing.T) {
	synctest.Test(t, testActivateProbesBesideLVMsLastActivation)
}

func testActivateProbesBesideLVMsLastActivation(t *testing.T) {
	example, err := os.ReadFile("../../examples/vdo-on-bcache.cue")
	if err != nil {
		t.Fatal(err)
	}
	stack, ghost := string(example), string(example)+"volumeGroups: ghost: pvs: [\"/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_missing\"]\n"
	for _, tc := range []struct {
		name, desired string
		vgs           []string // lvm2 activates these after vdosplit, from 310ms to 5010ms
		executorUntil time.Duration
		up            bool
		reports       []time.Duration
	}{
		// The report starts beside vdovg's activation and finds the stack up.
		{name: "up", desired: stack, vgs: []string{"vdovg"}, up: true,
			reports: []time.Duration{325 * time.Millisecond}},
		// vdovg's unit runs systemd's executor until 610ms: keel waits for
		// the vgchange before it probes.
		{name: "executor", desired: stack, vgs: []string{"vdovg"}, executorUntil: 610 * time.Millisecond, up: true,
			reports: []time.Duration{625 * time.Millisecond}},
		// A declared disk is missing: the probe beside lvm2 does not show
		// the stack up, so keel waits for lvm2's end and probes again.
		{name: "not up", desired: ghost,
			vgs: []string{"vdovg", "ghost"}, reports: []time.Duration{325 * time.Millisecond, 5025 * time.Millisecond}},
		// lvm2 never starts ghost's activation: keel waits for vdovg's end.
		{name: "unseen", desired: ghost,
			vgs: []string{"vdovg"}, reports: []time.Duration{5025 * time.Millisecond}},
	} {
		dir, root := t.TempDir(), t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "d.cue"), []byte(tc.desired), 0o644); err != nil {
			t.Fatal(err)
		}
		write := func(name, content string) {
			p := filepath.Join(root, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		vgchange := func(vg string) string {
			return "/usr/sbin/lvm\x00vgchange\x00-aay\x00--autoactivation\x00event\x00" + vg + "\x00"
		}
		at := func(d time.Duration, f func()) {
			go func() {
				time.Sleep(d)
				f()
			}()
		}
		src, _, _ := convergetest.Replayed(t, "../../examples/nodes/vdo-on-bcache.txtar")
		reports := &reportTimes{Runner: src.Runner, start: time.Now()}
		src.Runner, src.FS = reports, procFS{FS: src.FS, dir: hostio.DirFS(root)}
		l := New([]string{dir}, Wiring{Source: src, Runner: &convergetest.RecordingRunner{}, SysFS: convergetest.NewMemSysFS(),
			DpkgDir: t.TempDir(), LVMConfPath: filepath.Join(t.TempDir(), "lvm.conf"), FileRoot: t.TempDir(), StateDir: t.TempDir(),
			Options: executor.Options{MaxAttempts: 1}, SkipOwnerCheck: true})
		if err := l.Load(l.Read()); err != nil {
			t.Fatal(err)
		}
		write("proc/300/cmdline", vgchange("vdosplit"))
		// As on the guest, udev starts the next VG's unit before
		// vdosplit's ends.
		at(310*time.Millisecond, func() {
			defer os.RemoveAll(filepath.Join(root, "proc/300"))
			for i, vg := range tc.vgs {
				pid := strconv.Itoa(301 + i)
				write("sys/fs/cgroup/system.slice/lvm-activate-"+vg+".service/cgroup.procs", pid)
				if tc.executorUntil > 0 {
					write("proc/"+pid+"/cmdline", "/usr/lib/systemd/systemd-executor\x00--deserialize\x0046\x00")
					at(tc.executorUntil-310*time.Millisecond, func() { write("proc/"+pid+"/cmdline", vgchange(vg)) })
				} else {
					write("proc/"+pid+"/cmdline", vgchange(vg))
				}
			}
		})
		at(5010*time.Millisecond, func() {
			for i, vg := range tc.vgs {
				os.RemoveAll(filepath.Join(root, "proc", strconv.Itoa(301+i)))
				os.RemoveAll(filepath.Join(root, "sys/fs/cgroup/system.slice/lvm-activate-"+vg+".service"))
			}
		})
		out, err := l.Activate(context.Background(), ActivateOptions{Deadline: reports.start.Add(6 * time.Second), Poll: 10 * time.Second})
		synctest.Wait()
		if err != nil || out.Plan.Done() != tc.up {
			t.Errorf("%s: stack up %v, want %v (err %v)", tc.name, out.Plan.Done(), tc.up, err)
		}
		if len(reports.at) < len(tc.reports) || !slices.Equal(reports.at[:len(tc.reports)], tc.reports) {
			t.Errorf("%s: reports at %v, want %v first", tc.name, reports.at, tc.reports)
		}
	}
}
