package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-storage/keel/internal/testenv"
)

// Golden output of keel recommend. The numbers in them are checked against
// measured layouts in lvm/vdo's tests; here the golden files pin the
// presentation. Run `go test ./cmd/keel -run Recommend -update`
// after an intended change and review the diff.
func TestRecommendGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"lab40g", []string{"--cpus", "16", "--size", "40G", "--virtual-size", "35G", "--max-discard", "4096", "--vg", "vdolab", "--pool", "vdopool"}, 0},
		{"lab40g_json", []string{"--cpus", "16", "--size", "40G", "--virtual-size", "35G", "--format", "json"}, 0},
		{"over_thick", []string{"--cpus", "16", "--size", "40G", "-V", "36G"}, 1},
		{"overcommit", []string{"--cpus", "8", "--size", "10G", "-V", "20G", "--overcommit"}, 0},
		{"default_virtual", []string{"--cpus", "4", "--size", "12G"}, 0},
		{"min_128m_slabs", []string{"--cpus", "2", "--size", "3G", "--slab-size", "128M"}, 0},
		{"sparse_1g", []string{"--cpus", "32", "--size", "1T", "--index-memory", "1G", "--sparse"}, 0},
		{"split_grow", []string{"--cpus", "16", "--size", "40G", "-V", "35G", "--split", "--grow", "10G",
			"--fast-pv", "/dev/nvme6n1", "--slow-pv", "/dev/nvme8n1", "--vg", "vdolab", "--pool", "splitpool", "--lv", "splitlv"}, 0},
		{"split_grow_json", []string{"--cpus", "16", "--size", "13G", "--split", "--grow", "256M", "--format", "json"}, 0},
		{"too_small", []string{"--cpus", "16", "--size", "4G"}, 2},
		{"bad_size", []string{"--cpus", "16", "--size", "12Q"}, 2},
		{"not_extent", []string{"--cpus", "16", "--size", "40G", "--extent-size", "3M"}, 2},
		{"no_size", []string{"--cpus", "16"}, 2},
		{"grow_without_split", []string{"--cpus", "16", "--size", "40G", "--grow", "2G"}, 2},
		{"index_unknown", []string{"--cpus", "16", "--size", "100G", "--index-memory", "3G"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(append([]string{"recommend"}, tt.args...), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			got := "$ keel recommend " + strings.Join(tt.args, " ") + "\n" + stdout.String()
			if stderr.Len() > 0 {
				got += "--- stderr\n" + stderr.String()
			}
			path := filepath.Join("testdata", "recommend", tt.name+".golden")
			if testenv.Update() {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s:\n--- got\n%s\n--- want\n%s", path, got, want)
			}
		})
	}
}

// The JSON form carries the numbers the article and the guest measured.
func TestRecommendJSONFigures(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"recommend", "--cpus", "16", "--size", "40G", "-V", "35G", "--split", "--format", "json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var r recommendation
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Layout.Slabs != 18 || r.Layout.Unused.Count != 336555 || r.Layout.RecoveryJournal.First != 10452928 ||
		r.Layout.SlabSummary.First != 10485696 || r.Capacity.AddressableBytes != 36<<30 {
		t.Errorf("layout: %+v, capacity %+v", r.Layout, r.Capacity)
	}
	if !r.Capacity.VirtualFitsThick || r.Capacity.MaxThickVirtualBytes >= 36<<30 || r.Capacity.MaxThickVirtualBytes < 35<<30 {
		t.Errorf("thick: %+v", r.Capacity)
	}
	if r.Threads.Total() != 16 || r.RAMTotalMiB != 457 || r.DedupeWindow != 256<<30 {
		t.Errorf("threads %+v, RAM %d, window %d", r.Threads, r.RAMTotalMiB, r.DedupeWindow)
	}
	if r.Split == nil || r.Split.Tail.First != 10207 || r.Split.Head.Count != 664 {
		t.Errorf("split: %+v", r.Split)
	}
}
