package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/hostio"
)

// TestSnapshotVerifyFailedPass re-records a guest snapshot whose lvm
// fullreport is made to fail (the recorded command gets an error): the live
// pass fails, so --verify must fail too and write nothing, even though the
// replay of what it would write fails the same way and gives the same model.
func TestSnapshotVerifyFailedPass(t *testing.T) {
	snap, err := hostio.ReadSnapshotFile(filepath.Join("..", "..", "probes", "testdata", "snapshots", "orphan-pv.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for k, rec := range snap.Commands {
		if len(rec.Argv) > 1 && rec.Argv[0] == "lvm" && rec.Argv[1] == "fullreport" {
			rec.Error = "exit status 5"
			snap.Commands[k] = rec
			found = true
		}
	}
	if !found {
		t.Fatal("orphan-pv.txtar has no lvm fullreport command")
	}
	data, err := snap.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	node, out := filepath.Join(dir, "failed.txtar"), filepath.Join(dir, "again.txtar")
	if err := os.WriteFile(node, data, 0o644); err != nil {
		t.Fatal(err)
	}

	var stdout, stderr bytes.Buffer
	if code := runSnapshot([]string{"--node", node, "--verify", "-o", out}, &stdout, &stderr); code != exitError {
		t.Errorf("keel snapshot --verify of a failed pass: exit %d, want %d\n%s", code, exitError, stderr.String())
	}
	if !strings.Contains(stderr.String(), "verify: the live pass failed: probe: ") || !strings.Contains(stderr.String(), "exit status 5") {
		t.Errorf("stderr does not say the live pass failed:\n%s", stderr.String())
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s written after a failed verification (stat: %v)", out, err)
	}

	// Without --verify the same pass is recorded, with a warning.
	stderr.Reset()
	if code := runSnapshot([]string{"--node", node, "-o", out}, &stdout, &stderr); code != exitOK {
		t.Errorf("keel snapshot of a failed pass without --verify: exit %d, want 0\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "keel snapshot: warning: probe: ") {
		t.Errorf("no warning for the failed pass:\n%s", stderr.String())
	}
}
