package bootwatch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/converge/convergetest"
	"github.com/keel-storage/keel/schema"
)

// Confirm returns the plan when the report read during lvm2's
// activation and device-mapper's devices after it show every declared VG
// active (the node captured in the guest after lvm2's vgchange -aay),
// writes nothing, and confirms nothing when a declared
// VG is not there: only all active confirms; the probe pass decides the
// rest.
func TestConfirm(t *testing.T) {
	const disks = "volumeGroups: {\n\tpve: pvs: [\"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd1\"]\n" +
		"\toffvg: pvs: [\"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd2\"]\n" +
		"\tlistvg: pvs: [\"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd3\"]\n"
	for _, tc := range []struct {
		desired string
		want    bool
	}{
		{disks + "}\n", true},
		{disks + "\tghost: pvs: [\"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_none\"]\n}\n", false},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "d.cue"), []byte(tc.desired), 0o644); err != nil {
			t.Fatal(err)
		}
		src, sys, _ := convergetest.Replayed(t, "../activation/testdata/autoactivation.txtar")
		w := watchOn(t, dir, src)
		order, ok := w.Confirm(context.Background(), StartEarlyReport(context.Background(), src, nil))
		switch {
		case tc.want && (!ok || len(order.Steps) != 3):
			t.Errorf("every declared VG active: confirmed %v, plan %+v; want a plan of 3 VGs", ok, order)
		case !tc.want && ok:
			t.Errorf("a declared VG absent: confirmed with %+v", order)
		}
		if sys.WriteLog() != "" {
			t.Errorf("Confirm wrote to sysfs: %q", sys.WriteLog())
		}
	}
}

// watchOn is a Watch of the desired state in dir on src.
func watchOn(t *testing.T, dir string, src hostio.Source) Watch {
	t.Helper()
	cfg, err := schema.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return Watch{Source: src, Desired: cfg, Log: hclog.NewNullLogger()}
}

// failingRunner answers every command with an error: a probe cannot run.
type failingRunner struct{}

func (failingRunner) Run(context.Context, hostio.Cmd) (hostio.Result, error) {
	return hostio.Result{ExitCode: -1}, errors.New("no host here")
}

// countingRunner counts the commands its Runner ran, by command line.
type countingRunner struct {
	hostio.Runner
	mu  sync.Mutex
	ran map[string]int
}

func (r *countingRunner) Run(ctx context.Context, c hostio.Cmd) (hostio.Result, error) {
	r.mu.Lock()
	r.ran[c.String()]++
	r.mu.Unlock()
	return r.Runner.Run(ctx, c)
}

// The reports of one wait read LVM's configuration once: the report
// started when lvm2 starts on the next VG replaces the one before and
// takes its lvmconfig, and Confirm reads no configuration of its own.
func TestEarlyReportsReadLVMConfigOnce(t *testing.T) {
	dir := t.TempDir()
	desired := "volumeGroups: {\n\tpve: pvs: [\"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd1\"]\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "d.cue"), []byte(desired), 0o644); err != nil {
		t.Fatal(err)
	}
	src, _, _ := convergetest.Replayed(t, "../activation/testdata/autoactivation.txtar")
	rec := &countingRunner{Runner: src.Runner, ran: map[string]int{}}
	src.Runner = rec
	ctx := context.Background()
	first := StartEarlyReport(ctx, src, nil)
	second := StartEarlyReport(ctx, src, first)
	if _, ok := watchOn(t, dir, src).Confirm(ctx, second); !ok {
		t.Fatal("pve active in the capture, not confirmed")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if n := rec.ran[probes.LVMConfigCmd().String()]; n != 1 {
		t.Errorf("lvmconfig ran %d times for two reports and a confirmation; want 1 (%v)", n, rec.ran)
	}
}
