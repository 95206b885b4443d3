package probes

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/hostio"
)

// The fixtures are the first 8 KiB of a PV in the test guest (dd iflag=direct,
// e2e/signal/scenario.sh): pv-a.bin after `vgcreate sigvg` and `lvcreate -L
// 64M -n act`, pv-b.bin the same PV after one more commit (`lvchange
// --addtag captured sigvg/act`), pv-hdd1.bin a second PV of the VG at the end
// of that scenario. The nvme0 disk is 8 GiB, hdd1 8 GiB.
func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "pvheader", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseLVMLabel(t *testing.T) {
	for _, name := range []string{"pv-a.bin", "pv-b.bin", "pv-hdd1.bin"} {
		b := readFixture(t, name)
		l, err := ParseLVMLabel(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// pvcreate writes the label to sector 1 (lvm2 label.c, LABEL_SCAN_SECTORS
		// 4, the default sector 1) with one data area and one metadata area at
		// 4 KiB.
		if l.Sector != 1 || len(l.UUID) != 32 || l.DevSize != 8<<30 {
			t.Errorf("%s: sector %d uuid %q devsize %d", name, l.Sector, l.UUID, l.DevSize)
		}
		if len(l.DataAreas) != 1 || l.DataAreas[0].Offset != 1<<20 {
			t.Errorf("%s: data areas %+v, want one at 1 MiB", name, l.DataAreas)
		}
		if len(l.MetadataAreas) != 1 || l.MetadataAreas[0].Offset != 4096 || l.MetadataAreas[0].Size != 1<<20-4096 {
			t.Fatalf("%s: metadata areas %+v, want one at 4096 up to 1 MiB", name, l.MetadataAreas)
		}
		h, err := ParseMDAHeader(b[4096:])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if h.Version != 1 || h.Start != 4096 || h.Size != l.MetadataAreas[0].Size || len(h.Locns) == 0 {
			t.Fatalf("%s: mda header %+v", name, h)
		}
		// The committed text lies inside the area, past its 512-byte header.
		if r := h.Locns[0]; r.Offset < 512 || r.Offset+r.Size > h.Size || r.Size == 0 {
			t.Errorf("%s: raw_locn %+v outside the area of %d bytes", name, r, h.Size)
		}
	}
	// The same PV after one commit: same label, another committed text.
	a, b := readFixture(t, "pv-a.bin"), readFixture(t, "pv-b.bin")
	la, _ := ParseLVMLabel(a)
	lb, _ := ParseLVMLabel(b)
	if !bytes.Equal(la.Raw, lb.Raw) {
		t.Error("the label changed with an lvchange --addtag")
	}
	ha, _ := ParseMDAHeader(a[4096:])
	hb, _ := ParseMDAHeader(b[4096:])
	if ha.Locns[0] == hb.Locns[0] {
		t.Errorf("the committed raw_locn did not change with a commit: %+v", ha.Locns[0])
	}
}

func TestParseLVMLabelBroken(t *testing.T) {
	a := readFixture(t, "pv-a.bin")
	flip := func(off int) []byte {
		b := append([]byte(nil), a...)
		b[off] ^= 0xff
		return b
	}
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"no label", make([]byte, 4096), "no LVM label"},
		{"a bit of the pv_header", flip(512 + 40), "checksum"},
		{"the label type", flip(512 + 24), "checksum"},
	} {
		if _, err := ParseLVMLabel(c.b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
	for _, c := range []struct {
		name string
		off  int
		want string
	}{
		{"magic", 4096 + 5, "magic"},
		{"raw_locn", 4096 + 40, "checksum"},
		{"checksum", 4096, "checksum"},
	} {
		if _, err := ParseMDAHeader(flip(c.off)[4096:]); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("mda header with a flipped %s: err %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := ParseMDAHeader(a[4096 : 4096+100]); err == nil {
		t.Error("a short mda header parsed")
	}
}

// MetadataStamp through a file root: a commit changes it, a wiped label
// stamps "no label", a broken header is a stamp that differs, and a missing
// device is an error naming it.
func TestMetadataStamp(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, b := readFixture(t, "pv-a.bin"), readFixture(t, "pv-b.bin")
	broken := append([]byte(nil), a...)
	broken[4096+40] ^= 1
	write("a", a)
	write("b", b)
	write("wiped", make([]byte, 8192))
	write("broken", broken)
	fsys := hostio.DirFS(dir)
	stamp := func(name string) string {
		t.Helper()
		s, err := MetadataStamp(fsys, "/"+name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return s
	}
	sa, sb := stamp("a"), stamp("b")
	if sa == sb {
		t.Error("the stamp did not change with a commit")
	}
	if sa != stamp("a") {
		t.Error("two reads of the same bytes stamp differently")
	}
	if s := stamp("wiped"); s != "no label" {
		t.Errorf("wiped PV stamps %q", s)
	}
	if s := stamp("broken"); s == sa || !strings.Contains(s, "checksum") {
		t.Errorf("broken header stamps %q", s)
	}
	if _, err := MetadataStamp(fsys, "/gone"); err == nil || !strings.Contains(err.Error(), "/gone") {
		t.Errorf("missing device: err %v", err)
	}
}

// The poll's cost per PV: two 4 KiB reads and the parse (BenchmarkMetadataStamp,
// through a file), and the parse alone.
func BenchmarkMetadataStamp(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pv"), readFixture(b, "pv-b.bin"), 0o644); err != nil {
		b.Fatal(err)
	}
	fsys := hostio.DirFS(dir)
	for i := 0; i < b.N; i++ {
		if _, err := MetadataStamp(fsys, "/pv"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParsePVHeaders(b *testing.B) {
	pv := readFixture(b, "pv-b.bin")
	for i := 0; i < b.N; i++ {
		if _, err := ParseLVMLabel(pv); err != nil {
			b.Fatal(err)
		}
		if _, err := ParseMDAHeader(pv[4096:]); err != nil {
			b.Fatal(err)
		}
	}
}
