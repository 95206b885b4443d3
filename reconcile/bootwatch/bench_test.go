package bootwatch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/schema/spec"
)

// BenchmarkWaitLook is one look of WaitForLVM while lvm2 activates a VG:
// the activation units' cgroups (a slice of 40 units, one of them lvm2's
// with its vgchange), that vgchange's command line, udev's queue. The
// wait makes one every lvmActivationTick, for as long as lvm2's
// activation runs; ns/op times 40 is its cost per second of the wait.
func BenchmarkWaitLook(b *testing.B) {
	fsys := busyTree(b)
	b.ReportAllocs()
	for b.Loop() {
		units, err := probes.ActivationUnits(fsys)
		if err != nil || len(units) != 1 || units[0].Procs != 1 {
			b.Fatalf("units %+v, %v", units, err)
		}
		if !probes.Running(fsys, 412) {
			b.Fatal("vgchange not running")
		}
		_ = probes.UdevBusy(fsys)
	}
}

// BenchmarkWaitForLVM waits a second while lvm2 activates vdovg (the tree of
// BenchmarkWaitLook) and reports the CPU the process used per second of
// the wait (cpu-ms/s): the looks, and the timer, wake-ups and scheduling
// of the Go runtime between them, user and system time together. "timer"
// looks every lvmActivationTick; "inotify" sleeps on hostio.Changes, as
// keel-boot and keel activate do on the live host, and looks after adding
// the unit's watch and on the fallback.
func BenchmarkWaitForLVM(b *testing.B) {
	for _, mode := range []string{"timer", "inotify"} {
		b.Run(mode, func(b *testing.B) {
			fsys := busyTree(b)
			w := Watch{Source: hostio.Source{FS: fsys}, Desired: &spec.Config{VolumeGroups: map[string]spec.VolumeGroup{"vdovg": {}}}}
			if mode == "inotify" {
				ch, err := hostio.NewChanges(fsys)
				if err != nil {
					b.Fatal(err)
				}
				defer ch.Close()
				w.Wake = ch
			}
			var wall, cpu time.Duration
			for b.Loop() {
				c0, start := processCPU(b), time.Now()
				w.WaitForLVM(context.Background(), start.Add(time.Second), nil, nil)
				wall += time.Since(start)
				cpu += processCPU(b) - c0
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/wall.Seconds(), "cpu-ms/s")
		})
	}
}

// processCPU is the user and system time this process has used.
func processCPU(b *testing.B) time.Duration {
	var r syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r); err != nil {
		b.Fatal(err)
	}
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// busyTree is a file root where lvm2's lvm-activate-vdovg.service runs its
// vgchange (PID 412) among 40 other units.
func busyTree(b *testing.B) hostio.FS {
	root := b.TempDir()
	slice := filepath.Join(root, "sys/fs/cgroup/system.slice")
	write := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 40 {
		write(filepath.Join(slice, fmt.Sprintf("unit%d.service", i), "cgroup.procs"), "")
	}
	write(filepath.Join(slice, "lvm-activate-vdovg.service", "cgroup.procs"), "412\n")
	write(filepath.Join(slice, "lvm-activate-vdovg.service", "cgroup.events"), "populated 1\nfrozen 0\n")
	if err := os.MkdirAll(filepath.Join(root, "run/udev"), 0o755); err != nil {
		b.Fatal(err)
	}
	write(filepath.Join(root, "proc/412/cmdline"), "/usr/sbin/lvm\x00vgchange\x00-aay\x00--autoactivation\x00event\x00vdovg\x00")
	return hostio.DirFS(root)
}
