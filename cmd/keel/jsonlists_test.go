package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
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

func TestEmptyListsKeepsValues(t *testing.T) {
	type inner struct{ L []int }
	v := struct {
		A []string
		B []string
		M map[string]inner
		P *inner
	}{B: []string{"x"}, M: map[string]inner{"k": {}}}
	emptyLists(&v)
	if v.A == nil || len(v.A) != 0 || len(v.B) != 1 || v.M["k"].L == nil || v.P != nil {
		t.Fatalf("emptyLists: %+v", v)
	}
}
