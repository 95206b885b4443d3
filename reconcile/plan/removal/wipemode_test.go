package removal

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// node-wipemode.txtar is the capture of e2e/wipe/wipemode.sh after its
// setup: vms on the VDO LV lab/vdolv, extended with the SSD /dev/sda;
// vms/vm-100-disk-0 lies on the SSD only, vms/mixed has one segment on each;
// tvg/pooln (zeroing off) holds the thin LV vm-103-disk-0.
var wipemodeDecl = Declared{
	"lab": nil,
	"vms": {"vm-100-disk-0"},
	"tvg": {"vm-103-disk-0"},
}

func TestWipeModeFollowsTheLVsOwnDevices(t *testing.T) {
	o := recorded(t, "node-wipemode.txtar")
	for key, want := range map[string]string{
		"vms/vm-100-disk-0": "vdo [] other [/dev/sda]",
		"vms/mixed":         "vdo [/dev/lab/vdolv] other [/dev/sda]",
	} {
		vdo, other := o.vdoUnder(o.LVs[key])
		if got := fmt.Sprintf("vdo %v other %v", vdo, other); got != want {
			t.Errorf("under %s: %s, want %s", key, got, want)
		}
	}
	for _, c := range []struct {
		name  string
		mode  Mode
		want  string
		note  string
		after bool
	}{
		// On main's VG rule both were only discarded: the SSD keeps the
		// bytes of a discarded block, and the next LV read them.
		{"vms/vm-100-disk-0", ModeDiscard, "zeroout", "nothing below vms/vm-100-disk-0 returns discarded blocks as zeroes", false},
		{"vms/mixed", ModeDiscard, "zeroout", "only part of vms/mixed is on VDO (/dev/lab/vdolv): its extents on /dev/sda would keep their bytes", false},
		// zeroout: no discard after, on main both got one.
		{"vms/vm-100-disk-0", ModeZeroOut, "zeroout", "", false},
		{"vms/mixed", ModeZeroOut, "zeroout", "", false},
	} {
		targets, err := Plan(o.Host, wipemodeDecl, Request{Names: []string{c.name}, Mode: c.mode})
		if err != nil {
			t.Fatalf("%s %s: %v", c.name, c.mode, err)
		}
		tg := targets[0]
		notes := strings.Join(tg.Notes, "\n")
		if string(tg.Mode) != c.want || tg.DiscardAfter != c.after || (c.note != "" && !strings.Contains(notes, c.note)) ||
			strings.Contains(notes, "discarding after zeroing") {
			t.Errorf("%s asked %s: mode %s, discard after %v, notes %q; want %s, %v, %q", c.name, c.mode, tg.Mode, tg.DiscardAfter, notes, c.want, c.after, c.note)
		}
	}
}

func TestWipeModeUnzeroedPoolHeld(t *testing.T) {
	o := recorded(t, "node-wipemode.txtar")
	if p := o.stack.Pools["tvg/pooln"]; p.Kind != "thin" || p.Zero {
		t.Fatalf("tvg/pooln from the capture: %+v", p)
	}
	req := Request{Names: []string{"tvg/vm-103-disk-0"}, RequireAbsent: true, Known: seen(wipemodeDecl)}
	targets, err := Plan(o.Host, wipemodeDecl, req)
	if !errors.Is(err, ErrRefused) || targets != nil || !strings.Contains(err.Error(), "turn zeroing on: lvchange -Z y tvg/pooln, or accept it: removal: allowUnzeroedThinReuse: true") {
		t.Fatalf("got %v, %v", targets, err)
	}
	req.AllowUnzeroedThinReuse = true
	if targets, err = Plan(o.Host, wipemodeDecl, req); err != nil || len(targets) != 1 || targets[0].Mode != ModeDiscard {
		t.Fatalf("opted in: %v, %v", targets, err)
	}
}
