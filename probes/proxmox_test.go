package probes

import (
	"context"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
)

// sharedCfgSnapshots are the passes e2e/ownership/sharedcfg.sh recorded in the
// test guest (KEEL_SHAREDCFG_SNAPSHOT_DIR).
const sharedCfgSnapshots = "../reconcile/plan/testdata/snapshots/"

func replaySharedCfg(t *testing.T, name string, opt Options) *model.Host {
	t.Helper()
	s, err := hostio.ReadSnapshotFile(sharedCfgSnapshots + name + ".txtar")
	if err != nil {
		t.Fatal(err)
	}
	h, err := ProbeWith(context.Background(), hostio.Replay(s), opt)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A Proxmox VE node before pmxcfs mounted /etc/pve (pve-manager installed,
// /etc/pve empty, no storage.cfg) is a node whose storage.cfg is unknown,
// not a host without Proxmox VE.
func TestProbeProxmoxWindow(t *testing.T) {
	h := replaySharedCfg(t, "sharedcfg-window", Options{})
	p := h.Proxmox
	if p == nil {
		t.Fatal("no Proxmox VE node seen")
	}
	if !strings.Contains(p.Node, "pve-manager is installed") {
		t.Errorf("node evidence %q", p.Node)
	}
	for _, want := range []string{"/etc/pve/storage.cfg does not exist", "/etc/pve is empty: pve-cluster's pmxcfs has not mounted it"} {
		if !strings.Contains(p.Unreadable, want) {
			t.Errorf("unreadable %q lacks %q", p.Unreadable, want)
		}
	}
	if h.PVEStorageCfg != DefaultPVEStorageCfg || len(p.Storages) != 0 {
		t.Errorf("read %s, storages %v", h.PVEStorageCfg, p.Storages)
	}
}

// The same guest without Proxmox VE's files: no node, no storage.cfg.
func TestProbeProxmoxNone(t *testing.T) {
	h := replaySharedCfg(t, "sharedcfg-declared", Options{})
	if h.Proxmox != nil {
		t.Fatalf("Proxmox VE seen: %+v", h.Proxmox)
	}
}

// storage.cfg is read where the desired state says, and a replay reads the
// path its snapshot recorded, whatever its caller asks.
func TestProbeProxmoxConfiguredPath(t *testing.T) {
	for _, opt := range []Options{{}, {PVEStorageCfg: "/somewhere/else.cfg"}} {
		h := replaySharedCfg(t, "sharedcfg-custom", opt)
		if h.PVEStorageCfg != "/etc/keel-pve/storage.cfg" {
			t.Fatalf("%+v: read %q", opt, h.PVEStorageCfg)
		}
		p := h.Proxmox
		if p == nil || p.Node != "" || p.Unreadable != "" || len(p.Storages) != 2 {
			t.Fatalf("%+v: %+v", opt, p)
		}
		if s := p.Storages[1]; s.ID != "san3" || s.VG != "pvecustom" || s.Options["shared"] != "1" {
			t.Errorf("%+v: storage %+v", opt, s)
		}
	}
}

// dpkgRunner answers pveStorageVersionCmd with version (exit 1 when "",
// as dpkg-query without the package), counts it, and passes every other
// command to the replay.
type dpkgRunner struct {
	hostio.Runner
	version string
	asked   int
}

func (r *dpkgRunner) Run(ctx context.Context, c hostio.Cmd) (hostio.Result, error) {
	if c.String() != pveStorageVersionCmd.String() {
		return r.Runner.Run(ctx, c)
	}
	r.asked++
	if r.version == "" {
		return hostio.Result{ExitCode: 1, Stderr: []byte("dpkg-query: no packages found matching libpve-storage-perl\n")}, nil
	}
	return hostio.Result{Stdout: []byte(r.version)}, nil
}

// On a Proxmox VE node the probe asks dpkg for pve-storage's version, once;
// elsewhere it never asks; a package that is absent, or a snapshot taken
// before keel asked, leaves the version unknown and adds no probe error.
func TestProbePVEStorageVersion(t *testing.T) {
	for _, c := range []struct {
		snapshot, version, want string
		asked                   int
	}{
		{"sharedcfg-window", "9.1.7", "9.1.7", 1},
		{"sharedcfg-window", "", "", 1},
		{"sharedcfg-declared", "9.1.7", "", 0},
	} {
		s, err := hostio.ReadSnapshotFile(sharedCfgSnapshots + c.snapshot + ".txtar")
		if err != nil {
			t.Fatal(err)
		}
		src := hostio.Replay(s)
		r := &dpkgRunner{Runner: src.Runner, version: c.version}
		src.Runner = r
		h, err := Probe(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		if h.PVEStorageVersion != c.want || r.asked != c.asked {
			t.Errorf("%s, dpkg says %q: version %q, asked %d times; want %q, %d", c.snapshot, c.version, h.PVEStorageVersion, r.asked, c.want, c.asked)
		}
		if len(h.Errors) != 0 {
			t.Errorf("%s: probe errors %q", c.snapshot, h.Errors)
		}
	}
	// Replayed as recorded (no dpkg-query in the snapshot): unknown.
	if h := replaySharedCfg(t, "sharedcfg-window", Options{}); h.PVEStorageVersion != "" || len(h.Errors) != 0 {
		t.Errorf("replay without dpkg-query: version %q, errors %q", h.PVEStorageVersion, h.Errors)
	}
}
