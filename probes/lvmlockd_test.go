package probes

import (
	"context"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/hostio"
)

// lvmlockd's state as e2e/health/lockd.sh captured it: the sanlock VG
// lockvg with its lockspace started (vgcreate --shared starts it), stopped
// (vgchange --lockstop), and lvmlockd gone (lvmlockctl --quit).
func TestProbeLvmlockd(t *testing.T) {
	for _, c := range []struct {
		name             string
		running, started bool
	}{
		{"lockd-started", true, true},
		{"lockd-stopped", true, false},
		{"lockd-nodaemon", false, false},
	} {
		h := replaySharedCfg(t, c.name, Options{})
		vg := h.VGs["lockvg"]
		if vg == nil || !vg.Lockd() || vg.LockType != "sanlock" || !strings.Contains(vg.LockArgs, "lvmlock") {
			t.Fatalf("%s: lockvg not read as a sanlock VG with its lock args: %+v", c.name, vg)
		}
		l := h.Lvmlockd
		if l == nil || l.Error != "" {
			t.Fatalf("%s: lvmlockd's state not read: %+v", c.name, l)
		}
		if l.Running != c.running || l.LockStarted("lockvg") != c.started {
			t.Errorf("%s: lvmlockd running %v, lockvg started %v; want %v, %v", c.name, l.Running, l.LockStarted("lockvg"), c.running, c.started)
		}
	}
}

// A host without a VG of an lvmlockd lock type does not ask lvmlockd: the
// captures of the shared VGs without lvmlockd (declared shared, Proxmox
// VE's shared 1) replay without an lvmlockctl record.
func TestProbeLvmlockdNotAsked(t *testing.T) {
	for _, name := range []string{"sharedcfg-declared", "sharedcfg-custom"} {
		if h := replaySharedCfg(t, name, Options{}); h.Lvmlockd != nil {
			t.Errorf("%s: lvmlockd asked without an lvmlockd VG: %+v", name, h.Lvmlockd)
		}
	}
}

// A snapshot taken before keel asked lvmlockd (no lvmlockctl record; on a
// host, lvmlockctl not installed or failing otherwise) leaves lvmlockd's
// state unknown, not stopped: Error says why, and the pass goes on.
func TestProbeLvmlockdUnknown(t *testing.T) {
	s, err := hostio.ReadSnapshotFile(sharedCfgSnapshots + "lockd-stopped.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Commands[lvmlockctlInfoCmd.String()]; !ok {
		t.Fatalf("capture has no %s record", lvmlockctlInfoCmd)
	}
	delete(s.Commands, lvmlockctlInfoCmd.String())
	h, err := Probe(context.Background(), hostio.Replay(s))
	if err != nil {
		t.Fatal(err)
	}
	if l := h.Lvmlockd; l == nil || l.Error == "" || l.Running || len(l.Started) > 0 {
		t.Errorf("lvmlockd's state without lvmlockctl: %+v, want unknown", l)
	}
}
