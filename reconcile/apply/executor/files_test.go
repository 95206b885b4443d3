package executor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-storage/keel/reconcile/plan"
)

// applyRule applies a udev rule's file action through an executor over
// r, writing under root, against a host whose finding it clears.
func applyRule(t *testing.T, r *recRunner, root string) (Report, error) {
	t.Helper()
	f := plan.Finding{ID: "bcache.udev_rule", Severity: plan.Warning, Object: "udev:/etc/udev/rules.d/70-keel-bcache.rules"}
	h := &host{present: map[string]plan.Finding{f.Key(): f}, applied: map[string]int{}, fixAfter: 1}
	e := New(r, Options{})
	e.Clock = newClock()
	e.Files = DirFiles(root)
	a := plan.Action{ID: "bcache.udev_rule:x", Kind: plan.KindFile, Class: plan.Live, Object: f.Object,
		Files:    []plan.FileWrite{{Path: "/etc/udev/rules.d/70-keel-bcache.rules", Content: "# rule\n", Mode: 0o644}},
		Commands: [][]string{plan.UdevReload}, Remedies: []string{f.Key()}}
	return e.Apply(context.Background(), []plan.Action{a}, h.findings(), Mode{}, h.reprobe)
}

func TestFileActionWritesThenReloads(t *testing.T) {
	root := t.TempDir()
	r := &recRunner{fail: map[string]bool{}}
	rep, err := applyRule(t, r, root)
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Results[0]; got.Status != Converged {
		t.Fatalf("result %+v", got)
	}
	dst := filepath.Join(root, "etc/udev/rules.d/70-keel-bcache.rules")
	b, err := os.ReadFile(dst)
	if err != nil || string(b) != "# rule\n" {
		t.Fatalf("written file: %q, %v", b, err)
	}
	if st, err := os.Stat(dst); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("mode: %v, %v", st.Mode(), err)
	}
	if m := r.mutating(); strings.Join(m, ";") != strings.Join(plan.UdevReload, " ") {
		t.Errorf("commands after the write: %q", m)
	}
	// No temporary file is left next to it.
	ents, _ := os.ReadDir(filepath.Dir(dst))
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want 1", len(ents))
	}
}

// A udev rule written while systemd-udevd is too busy to answer (a flood
// of uevents: `udevadm control --reload` then fails with "Failed to wait
// for daemon to reply: Connection timed out") converges: the file is the
// change, and udevd reads changed rules files on its own before it runs its
// next event. A failed action would be retried, and every retry would hold
// the daemon's loop for udevadm's timeout.
func TestFileActionConvergesWhenTheReloadFails(t *testing.T) {
	r := &recRunner{fail: map[string]bool{"udevadm": true}}
	rep, err := applyRule(t, r, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Results[0]; got.Status != Converged || got.Attempts != 1 {
		t.Fatalf("result %+v, want converged at the first attempt", got)
	}
	if m := r.mutating(); len(m) != 1 {
		t.Errorf("commands %q, want the one reload", m)
	}
}

func TestFileActionWithoutApplierFails(t *testing.T) {
	e := New(&recRunner{fail: map[string]bool{}}, Options{MaxAttempts: 1})
	e.Clock = newClock()
	a := plan.Action{ID: "f", Kind: plan.KindFile, Class: plan.Live, Object: "udev:x",
		Files: []plan.FileWrite{{Path: "/x", Content: "y"}}}
	rep, _ := e.Apply(context.Background(), []plan.Action{a}, nil, Mode{}, nil)
	if len(rep.Results) != 1 || rep.Results[0].Status == Converged {
		t.Fatalf("results %+v", rep.Results)
	}
}

// The executor's own findings are in the finding catalogue with the
// severity it raises them at.
func TestOwnFindingsCatalogued(t *testing.T) {
	for _, id := range []plan.FindingID{plan.ReconcileStuck, plan.ReconcileRefused} {
		r, ok := plan.Lookup(id)
		if !ok || r.Severity != plan.Error || !r.Runtime() {
			t.Errorf("%s: catalogue entry %+v (found %v), want a runtime error", id, r, ok)
		}
	}
}
