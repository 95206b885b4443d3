package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/reconcile/state"
)

// Every list in keel status --format json is [] when empty, never null, on
// every bundled capture: a consumer iterates it without a null check.
func TestStatusJSONListsNeverNull(t *testing.T) {
	snaps, err := filepath.Glob("../../probes/testdata/snapshots/*.txtar")
	if err != nil || len(snaps) == 0 {
		t.Fatalf("no snapshots: %v", err)
	}
	for _, snap := range snaps {
		code, out, stderr := runKeel(t, "status", "--format", "json", "--node", snap)
		if code != 0 {
			t.Errorf("%s: exit %d: %s", snap, code, stderr)
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%s: %v", snap, err)
		}
		for _, p := range nullLists(v, "") {
			t.Errorf("%s: %s is null", filepath.Base(snap), p)
		}
	}
}

// nullLists lists the paths of null values in v whose key names a list
// keel's model holds; the pointers that are null by design ("status" of an
// inactive pool, "proxmox" off Proxmox) are not lists.
func nullLists(v any, path string) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil && k != "status" && k != "proxmox" && !strings.HasSuffix(k, "File") {
				out = append(out, path+"."+k)
			}
			out = append(out, nullLists(e, path+"."+k)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, nullLists(e, path+"[]")...)
		}
	}
	return out
}

// keel status --format json carries the holds of this host's state, each
// saying whether it still holds; a replayed snapshot recorded none and has
// no "holds" key.
func TestStatusJSONHolds(t *testing.T) {
	now := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	got := holdsJSON(map[string]state.Hold{
		"vg0":     {Reason: "pvmove by hand", Since: now.Add(-time.Hour)},
		"vg1/lv0": {Reason: "drain", Since: now.Add(-2 * time.Hour), Until: now.Add(-time.Minute)},
	}, now)
	if !got["vg0"].InForce || got["vg1/lv0"].InForce || got["vg0"].Reason != "pvmove by hand" {
		t.Errorf("holds %+v", got)
	}
	b, err := json.Marshal(got)
	if err != nil || strings.Count(string(b), `"until"`) != 1 {
		t.Errorf("holds JSON %s (%v): want one until, for the hold that has an end", b, err)
	}
	_, out, _ := runKeel(t, "status", "--format", "json", "--node", "../../probes/testdata/snapshots/thin.txtar")
	if strings.Contains(out, `"holds"`) {
		t.Errorf("a replayed snapshot shows holds:\n%s", out)
	}
}
