package hostio

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadFileAsOS requires readFile to return what os.ReadFile returns,
// bytes and error text (a snapshot records both), for the files a pass
// reads: small and large regular files, an empty one, kernel attributes
// (procfs, sysfs where the machine has it), a missing file, a directory.
func TestReadFileAsOS(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	paths := []string{
		write("empty", nil),
		write("attr", []byte("4096\n")),
		write("exactly512", bytes.Repeat([]byte("x"), 512)),
		write("lvm.conf", []byte(strings.Repeat("# a comment line of lvm.conf\n", 4000))), // 116 KB
		filepath.Join(dir, "missing"),
		dir, // a directory: open works, read fails
		"/proc/self/status",
		"/proc/self/mountinfo",
		"/sys/kernel/mm/transparent_hugepage/enabled",
	}
	if ents, err := os.ReadDir("/sys/block"); err == nil && len(ents) > 0 {
		paths = append(paths, "/sys/block/"+ents[0].Name()+"/size", "/sys/block/"+ents[0].Name()+"/queue/rotational")
	}
	for _, p := range paths {
		want, werr := os.ReadFile(p)
		got, gerr := readFile(p)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Errorf("%s: error %v, os.ReadFile's %v", p, gerr, werr)
		}
		if strings.HasPrefix(p, "/proc/self/") {
			continue // differs between two reads (the reading thread, counters)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes differ from os.ReadFile's %d", p, len(got), len(want))
		}
	}
}

// TestReadDirNamesAsOS requires readDirNames to list what os.ReadDir lists
// and fail as it fails, error text included: a directory of more entries
// than one getdents buffer holds, an empty one, sysfs where the machine
// has it, a missing path, a file.
func TestReadDirNamesAsOS(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.Mkdir(big, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 600 { // 600 entries of 40-odd bytes: several buffers
		if err := os.WriteFile(filepath.Join(big, fmt.Sprintf("dm-name-thinscale-vm--%04d--disk--0", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{big, empty, file, filepath.Join(dir, "missing"), "/sys/block", "/sys/class/block", "/proc/self/task"} {
		ents, werr := os.ReadDir(p)
		var want []string
		for _, e := range ents {
			want = append(want, e.Name())
		}
		got, gerr := readDirNames(p)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Errorf("%s: error %v, os.ReadDir's %v", p, gerr, werr)
		}
		slices.Sort(got)
		if werr == nil && !slices.Equal(got, want) {
			t.Errorf("%s: %d names %.80q, os.ReadDir's %d %.80q", p, len(got), got, len(want), want)
		}
	}
}
