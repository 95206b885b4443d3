package bcache

import (
	"context"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/plan"
)

// read returns a sysfs read-back captured in the test guest by
// e2e/apply/capture.sh (see testdata/README.md).
func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestHprintMatchesKernel(t *testing.T) {
	for _, tc := range []struct {
		v    int64
		file string
	}{
		{0, "bcache-sequential_cutoff-0.txt"},
		{1000000, "bcache-sequential_cutoff-1000000.txt"},
		{8388608, "bcache-sequential_cutoff-8388608.txt"},
		{4 << 20, "bcache-default-sequential_cutoff.txt"},
		{2048 << 9, "bcache-writeback_rate-2048.txt"},
		{1024 << 9, "bcache-default-writeback_rate.txt"},
	} {
		if got, want := model.Hprint(tc.v), read(t, tc.file); got != want {
			t.Errorf("probes.Hprint(%d) = %q, kernel printed %q", tc.v, got, want)
		}
	}
	for v, want := range map[int64]string{1023: "0.9k", 1024 * 1000: "0.9M", 1024 * 1024 * 999: "999.0M", -2048: "-2.0k"} {
		if got := model.Hprint(v); got != want {
			t.Errorf("probes.Hprint(%d) = %q, want %q", v, got, want)
		}
	}
}

func TestMatches(t *testing.T) {
	for _, tc := range []struct {
		attr, want, file string
		ok               bool
	}{
		{"sequential_cutoff", "0", "bcache-sequential_cutoff-0.txt", true},
		{"sequential_cutoff", "1000000", "bcache-sequential_cutoff-1000000.txt", true},
		// The read-back has one decimal digit: values that close cannot be
		// told apart, values further off can.
		{"sequential_cutoff", "999999", "bcache-sequential_cutoff-1000000.txt", true},
		{"sequential_cutoff", "990000", "bcache-sequential_cutoff-1000000.txt", false},
		{"sequential_cutoff", "0", "bcache-default-sequential_cutoff.txt", false},
		{"writeback_rate", "2048", "bcache-writeback_rate-2048.txt", true},
		{"writeback_percent", "40", "bcache-writeback_percent-40.txt", true},
		{"writeback_percent", "70", "bcache-writeback_percent-70.txt", false},
		{"writeback_rate_minimum", "16", "bcache-writeback_rate_minimum-16.txt", true},
		{"congested_read_threshold_us", "0", "bcache-congested_read_threshold_us-0.txt", true},
		{"congested_write_threshold_us", "0", "bcache-default-congested_write_threshold_us.txt", false},
		{"cache_mode", "writeback", "bcache-cache_mode-writeback.txt", true},
		{"cache_mode", "writeback", "bcache-default-cache_mode.txt", false},
		{"cache_mode", "writethrough", "bcache-default-cache_mode.txt", true},
		// cache_mode is kept in the superblock: a re-registration keeps it,
		// but the other tunables are back to their defaults.
		{"cache_mode", "writeback", "bcache-reregistered-cache_mode.txt", true},
		{"writeback_percent", "40", "bcache-reregistered-writeback_percent.txt", false},
		{"sequential_cutoff", "0", "bcache-reregistered-sequential_cutoff.txt", false},
	} {
		ok, err := Matches(tc.attr, tc.want, read(t, tc.file))
		if err != nil || ok != tc.ok {
			t.Errorf("Matches(%s, %s, %s) = %v, %v; want %v", tc.attr, tc.want, tc.file, ok, err, tc.ok)
		}
	}
	for _, bad := range [][2]string{{"sequential_cutoff", "4M"}, {"writeback_percent", "-1"}, {"cache_mode", "fast"}, {"writeback_rate", "1.5"}} {
		if _, err := Matches(bad[0], bad[1], "0"); !errors.Is(err, ErrBadValue) {
			t.Errorf("%v accepted: %v", bad, err)
		}
	}
}

// kernel is a fake sysfs whose read-back after a write is what the real
// kernel printed after the same write (captured files named
// bcache-<attr>-<value>.txt), and whose writes of a non-decimal fail as the
// kernel's did (bcache-sequential_cutoff-4M.rc is 1).
type kernel struct {
	t       *testing.T
	current map[string]string
	writes  []string
}

func (k *kernel) WriteFile(name string, data []byte) error {
	attr, v := path.Base(name), string(data)
	k.writes = append(k.writes, attr+"="+v)
	file := filepath.Join("testdata", "bcache-"+attr+"-"+v+".txt")
	if rc, err := os.ReadFile(filepath.Join("testdata", "bcache-"+attr+"-"+v+".rc")); err == nil && strings.TrimSpace(string(rc)) != "0" {
		return errors.New("write error: Invalid argument")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		k.t.Fatalf("no capture for writing %s to %s", v, attr)
	}
	k.current[name] = string(b)
	return nil
}

func (k *kernel) ReadFile(name string) ([]byte, error) {
	v, ok := k.current[name]
	if !ok {
		return nil, os.ErrNotExist
	}
	return []byte(v), nil
}

const bdev = "/sys/block/bcache0/bcache/"

func TestApplyDetectsClamp(t *testing.T) {
	k := &kernel{t: t, current: map[string]string{}}
	err := Apply(context.Background(), k, []plan.SysfsWrite{
		{Path: bdev + "sequential_cutoff", Value: "0"},
		{Path: bdev + "writeback_percent", Value: "70"},
		{Path: bdev + "cache_mode", Value: "writeback"},
	})
	var nc *NotConvergedError
	if !errors.As(err, &nc) || nc.Wrote != "70" || nc.Read != "40" || nc.Path != bdev+"writeback_percent" {
		t.Fatalf("err %v", err)
	}
	// The clamped value did not stop the writes after it.
	if strings.Join(k.writes, " ") != "sequential_cutoff=0 writeback_percent=70 cache_mode=writeback" {
		t.Fatalf("writes %v", k.writes)
	}
}

func TestApplyConverges(t *testing.T) {
	k := &kernel{t: t, current: map[string]string{}}
	a := plan.Action{ID: "bcache.tunables:a3a774bf", Kind: plan.KindSysfs, Writes: []plan.SysfsWrite{
		{Path: bdev + "sequential_cutoff", Value: "1000000"},
		{Path: bdev + "writeback_percent", Value: "40"},
		{Path: bdev + "writeback_rate_minimum", Value: "16"},
		{Path: "/sys/fs/bcache/ab9b7704-d77c-4188-a05f-f971cf7559b8/congested_read_threshold_us", Value: "0"},
	}}
	if err := Applier(k)(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	// Each attribute now reads back as the kernel shows the written value
	// (captured in the guest): sequential_cutoff in human units.
	for path, want := range map[string]string{
		bdev + "sequential_cutoff":      "976.5k",
		bdev + "writeback_percent":      "40",
		bdev + "writeback_rate_minimum": "16",
		"/sys/fs/bcache/ab9b7704-d77c-4188-a05f-f971cf7559b8/congested_read_threshold_us": "0",
	} {
		if got, _ := k.ReadFile(path); strings.TrimSpace(string(got)) != want {
			t.Errorf("%s reads %q after apply, want %q", path, got, want)
		}
	}
	if len(k.writes) != 4 {
		t.Errorf("writes %v, want one per attribute", k.writes)
	}
}

func TestApplyRefusesHumanValues(t *testing.T) {
	k := &kernel{t: t, current: map[string]string{}}
	err := Apply(context.Background(), k, []plan.SysfsWrite{{Path: bdev + "sequential_cutoff", Value: "4M"}})
	if !errors.Is(err, ErrBadValue) || len(k.writes) != 0 {
		t.Fatalf("err %v, writes %v", err, k.writes)
	}
}

func TestDirFS(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "sys/block/bcache0/bcache")
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "writeback_percent"), []byte("10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := DirFS(root)
	if err := fs.WriteFile(bdev+"writeback_percent", []byte("40")); err != nil {
		t.Fatal(err)
	}
	if b, _ := fs.ReadFile(bdev + "writeback_percent"); string(b) != "40" {
		t.Fatalf("read %q", b)
	}
	// Attributes are never created.
	if err := fs.WriteFile(bdev+"no_such_attr", []byte("1")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("created an attribute: %v", err)
	}
}
