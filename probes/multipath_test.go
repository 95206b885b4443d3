package probes

import (
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/model"
)

// The captures of e2e/health/multipath.sh (KEEL_MULTIPATH_SNAPSHOT_DIR,
// kept with the planner's): a multipath map mpkeel (dm UUID mpath-…) over
// the SCSI disk of serial mp1 and a loop device over it, healthy, with the
// loop path failed, and with both failed.
func replayMultipath(t *testing.T, name string) *model.Multipath {
	t.Helper()
	h := replaySharedCfg(t, name, Options{})
	m := h.Multipath["mpkeel"]
	if m == nil {
		t.Fatalf("%s: no multipath map mpkeel in %d dm devices", name, len(h.DM))
	}
	if len(m.Errors) > 0 {
		t.Fatalf("%s: %v", name, m.Errors)
	}
	if !strings.HasPrefix(m.Device, "dm-") || !model.IsMultipathUUID(m.UUID) {
		t.Errorf("%s: device %q uuid %q", name, m.Device, m.UUID)
	}
	if len(m.Groups) != 1 || len(m.Groups[0].Paths) != 2 {
		t.Fatalf("%s: groups %+v", name, m.Groups)
	}
	if p := m.Groups[0].Paths; !strings.HasPrefix(p[0].Device, "sd") || !strings.HasPrefix(p[1].Device, "loop") {
		t.Errorf("%s: paths %+v, want the SCSI disk then the loop device", name, p)
	}
	if len(h.DM) < 2 {
		t.Errorf("%s: the LV on the map is missing from dm devices", name)
	}
	return m
}

func pathStates(m *model.Multipath) string {
	var b strings.Builder
	for _, p := range m.Paths() {
		st := "F"
		if p.Active {
			st = "A"
		}
		b.WriteString(st)
	}
	return b.String()
}

func TestMultipathStates(t *testing.T) {
	for _, c := range []struct {
		name, states string
		fails        []uint64
	}{
		{"multipath-healthy", "AA", []uint64{0, 0}},
		{"multipath-degraded", "AF", []uint64{0, 1}},
		{"multipath-nopath", "FF", []uint64{1, 1}},
	} {
		m := replayMultipath(t, c.name)
		if got := pathStates(m); got != c.states {
			t.Errorf("%s: path states %s, want %s", c.name, got, c.states)
		}
		for i, p := range m.Paths() {
			if p.FailCount != c.fails[i] {
				t.Errorf("%s: path %s failed %d times, want %d", c.name, p.Name(), p.FailCount, c.fails[i])
			}
		}
	}
}

// A status line cut short anywhere is an error naming what is missing,
// never a map with fewer paths than it has: every prefix of the captured
// line but the whole is refused.
func TestMultipathStatusTruncated(t *testing.T) {
	h := replaySharedCfg(t, "multipath-degraded", Options{})
	line := strings.Fields(h.DM["mpkeel"].Status[0].Args)
	if _, err := parseMultipathStatus(strings.Join(line, " ")); err != nil {
		t.Fatalf("whole line: %v", err)
	}
	for n := 0; n < len(line); n++ {
		groups, err := parseMultipathStatus(strings.Join(line[:n], " "))
		if err == nil {
			t.Errorf("%d of %d fields: no error, groups %+v", n, len(line), groups)
		}
	}
}
