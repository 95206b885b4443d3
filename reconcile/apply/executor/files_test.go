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

// A removal takes only an LVM profile of keel's name: a planner that
// named any other file must not reach it. A profile already gone is no
// error (a pass interrupted after the removal runs it again).
func TestDirFilesRemovesOnlyKeelProfiles(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "etc/lvm/profile")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"keel-vg-tp-t70-p50.profile", "ops.profile"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("activation {\n}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	apply := DirFiles(root)
	ctx := context.Background()
	if err := apply(ctx, []plan.FileWrite{{Path: "/etc/lvm/profile/keel-vg-tp-t70-p50.profile", Remove: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "keel-vg-tp-t70-p50.profile")); !os.IsNotExist(err) {
		t.Errorf("keel's profile after its removal: %v", err)
	}
	if err := apply(ctx, []plan.FileWrite{{Path: "/etc/lvm/profile/keel-vg-tp-t70-p50.profile", Remove: true}}); err != nil {
		t.Errorf("removing it again: %v", err)
	}
	for _, p := range []string{"/etc/lvm/profile/ops.profile", "/etc/lvm/lvm.conf", "/etc/lvm/profile/../profile/ops.profile"} {
		if err := apply(ctx, []plan.FileWrite{{Path: p, Remove: true}}); err == nil || !strings.Contains(err.Error(), "keel removes only its own LVM profiles") {
			t.Errorf("removing %s: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ops.profile")); err != nil {
		t.Errorf("the operator's profile: %v", err)
	}
}
