package plan

import (
	"testing"

	"github.com/keel-storage/keel/probes/model"
)

// findingOn returns the finding id on object in fs, or nil.
func findingOn(fs []Finding, id FindingID, object string) *Finding {
	for i := range fs {
		if fs[i].ID == id && fs[i].Object == object {
			return &fs[i]
		}
	}
	return nil
}

// lockdResults plans the capture name of e2e/health/lockd.sh with its
// desired state and audits it: every rule of plan_lockd.go runs in both.
func lockdResults(t *testing.T, name string) map[string][]Finding {
	t.Helper()
	h := replayHost(t, name)
	return map[string][]Finding{
		"check":   Plan(loadDesired(t, "lockd", h), h).Findings,
		"audit":   Audit(replayHost(t, name)).Findings,
		"nothing": Plan(loadDesired(t, "agent-only", h), h).Findings,
	}
}

// The sanlock VG of e2e/health/lockd.sh at each step, planned with its
// desired state, audited, and planned with a desired state declaring
// nothing: as vgcreate --shared left it, lockspace started, with a guest
// disk made by lvcreate (autoactivation on), the disk is reported with the
// lvchange that turns it off; after vgchange --lockstop (the lvchange run
// before it) the lockspace is reported with vgchange --lockstart; with
// lvmlockd gone, one finding starts sanlock, lvmlockd and the lockspace.
func TestLockdFindings(t *testing.T) {
	for _, c := range []struct {
		capture, object, remedy string
		id                      FindingID
		severity                Severity
		not                     []Finding
	}{
		{"lockd-started", "lockvg/vm-100-disk-0", "lvchange --setautoactivation n lockvg/vm-100-disk-0", LVSharedAutoactivation, Warning,
			[]Finding{{ID: VGLockstartMissing, Object: "lockvg"}, {ID: VGLvmlockdMissing, Object: "lockvg"}}},
		{"lockd-stopped", "lockvg", "vgchange --lockstart lockvg", VGLockstartMissing, Warning,
			[]Finding{{ID: VGLvmlockdMissing, Object: "lockvg"}, {ID: LVSharedAutoactivation, Object: "lockvg/vm-100-disk-0"}}},
		{"lockd-nodaemon", "lockvg", "systemctl start wdmd sanlock lvmlockd && vgchange --lockstart lockvg", VGLvmlockdMissing, Error,
			[]Finding{{ID: VGLockstartMissing, Object: "lockvg"}}},
	} {
		for how, fs := range lockdResults(t, c.capture) {
			f := findingOn(fs, c.id, c.object)
			if f == nil {
				t.Errorf("%s %s: no %s on %s in %v", c.capture, how, c.id, c.object, keys(fs))
				continue
			}
			if f.Remedy != c.remedy || f.Severity != c.severity {
				t.Errorf("%s %s: %s remedy %q severity %s, want %q %s", c.capture, how, f.Key(), f.Remedy, f.Severity, c.remedy, c.severity)
			}
			for _, n := range c.not {
				if g := findingOn(fs, n.ID, n.Object); g != nil {
					t.Errorf("%s %s: also %s: %s", c.capture, how, g.Key(), g.Message)
				}
			}
		}
	}
}

// The disk is not autoactivated when it says so (lv_autoactivation off,
// the activation skip flag) or its VG does; nor reported when the VG is
// not shared at all.
func TestSharedAutoactivationOff(t *testing.T) {
	for _, c := range []struct {
		why    string
		change func(h *model.Host, lv *model.LV)
	}{
		{"lvchange --setautoactivation n", func(_ *model.Host, lv *model.LV) { lv.Fields.Set("lv_autoactivation", "") }},
		{"activation skip", func(_ *model.Host, lv *model.LV) { lv.Attr = lv.Attr[:9] + "k" }},
		{"vgchange --setautoactivation n", func(h *model.Host, _ *model.LV) { h.VGs["lockvg"].NoAutoactivation = true }},
		{"a local VG", func(h *model.Host, _ *model.LV) { h.VGs["lockvg"].LockType, h.VGs["lockvg"].Shared = "", false }},
	} {
		h := replayHost(t, "lockd-started")
		lv := h.LVs["lockvg/vm-100-disk-0"]
		if lv == nil || len(lv.Attr) != 10 {
			t.Fatalf("capture lacks lockvg/vm-100-disk-0 with its lv_attr: %+v", lv)
		}
		c.change(h, lv)
		if f := findingOn(Audit(h).Findings, LVSharedAutoactivation, "lockvg/vm-100-disk-0"); f != nil {
			t.Errorf("%s: still %s", c.why, f.Key())
		}
	}
}

// Where keel could not read lvmlockd's state (a snapshot from before it
// asked, lvmlockctl failing) it judges no lockspace.
func TestLockdUnknown(t *testing.T) {
	for _, name := range []string{"lockd-stopped", "lockd-nodaemon"} {
		h := replayHost(t, name)
		h.Lvmlockd = nil
		for _, f := range Audit(h).Findings {
			if f.ID == VGLockstartMissing || f.ID == VGLvmlockdMissing {
				t.Errorf("%s without lvmlockd's state: %s", name, f.Key())
			}
		}
	}
}
