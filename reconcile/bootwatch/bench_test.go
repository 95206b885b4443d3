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

// BenchmarkWaitForLVM waits 200 ms while lvm2 activates vdovg (the tree of
// BenchmarkWaitLook) and reports the CPU the process used per second of
// the wait (cpu-ms/s): the looks, and the timer, wake-ups and scheduling
// of the Go runtime between them, user and system time together.
func BenchmarkWaitForLVM(b *testing.B) {
	w := Watch{Source: hostio.Source{FS: busyTree(b)}, Desired: &spec.Config{VolumeGroups: map[string]spec.VolumeGroup{"vdovg": {}}}}
	var wall, cpu time.Duration
	for b.Loop() {
		c0, start := processCPU(b), time.Now()
		w.WaitForLVM(context.Background(), start.Add(200*time.Millisecond), nil, nil)
		wall += time.Since(start)
		cpu += processCPU(b) - c0
	}
	b.ReportMetric(float64(cpu.Milliseconds())/wall.Seconds(), "cpu-ms/s")
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
	write(filepath.Join(root, "proc/412/cmdline"), "/usr/sbin/lvm\x00vgchange\x00-aay\x00--autoactivation\x00event\x00vdovg\x00")
	return hostio.DirFS(root)
}
