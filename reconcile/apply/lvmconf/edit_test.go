package lvmconf

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/rogpeppe/go-internal/txtar"
)

// stock is trixie's /etc/lvm/lvm.conf as installed by lvm2 2.03.31-2
// (2514 lines, every section empty, every setting a comment), taken from a
// node snapshot the probes recorded in the test guest.
func stock(t testing.TB) []byte {
	t.Helper()
	ar, err := txtar.ParseFile("../../../probes/testdata/snapshots/orphan-pv.txtar")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ar.Files {
		if f.Name == "file/etc/lvm/lvm.conf" {
			return f.Data
		}
	}
	t.Fatal("the snapshot has no /etc/lvm/lvm.conf")
	return nil
}

// pveShaped is what Proxmox VE's pve-manager postinst (set_lvm_conf in
// debian/postinst, pve-manager 14a22df, 2026-08-21) leaves on a stock trixie
// file. There, `lvmconfig --typeconfig diff devices/global_filter` prints
// nothing, so the script takes its "no old value" branch and appends a new
// devices section with its marker comment and filter (the heredoc below is
// that branch's output, indentation included); `--typeconfig full
// devices/scan_lvs` prints scan_lvs=0, so the scan_lvs branch does not run.
func pveShaped(t testing.TB) []byte {
	return append(stock(t), []byte("devices {\n"+
		"     # added by pve-manager to avoid scanning ZFS zvols and Ceph rbds\n"+
		"     global_filter=[\"r|/dev/zd.*|\",\"r|/dev/rbd.*|\",\"r|/dev/nbd.*|\"]\n"+
		"}\n")...)
}

func ptr(b bool) *bool { return &b }

// removed returns what Edit must have inserted: out with src's bytes taken
// away, provided src is a subsequence kept in order; "" and false otherwise.
func onlyInserted(src, out []byte) (string, bool) {
	// Find the single insertion point: longest common prefix and suffix.
	p := 0
	for p < len(src) && p < len(out) && src[p] == out[p] {
		p++
	}
	s := 0
	for s < len(src)-p && s < len(out)-p && src[len(src)-1-s] == out[len(out)-1-s] {
		s++
	}
	if p+s != len(src) {
		return "", false
	}
	return string(out[p : len(out)-s]), true
}

func TestEditStockInsertsIntoDevicesOnly(t *testing.T) {
	src := stock(t)
	ch := plan.LVMConfChange{ScanLVs: ptr(true), UseDevicesFile: ptr(false),
		GlobalFilter: []string{"r|^/dev/zd.*|", "r|^/dev/bcache[0-9]+$|", "a|.*|"}}
	out, changed, err := Edit(src, ch)
	if err != nil || !changed {
		t.Fatalf("changed %v err %v", changed, err)
	}
	ins, ok := onlyInserted(src, out)
	if !ok {
		t.Fatal("edit changed bytes other than one insertion")
	}
	want := "\tscan_lvs = 1\n\tuse_devicesfile = 0\n\tglobal_filter = [ \"r|^/dev/zd.*|\", \"r|^/dev/bcache[0-9]+$|\", \"a|.*|\" ]\n"
	if ins != want {
		t.Fatalf("inserted %q, want %q", ins, want)
	}
	// It went into the devices section, before its closing brace.
	i := bytes.Index(out, []byte("\ndevices {\n"))
	j := bytes.Index(out[i:], []byte("\n}\n"))
	if !bytes.Contains(out[i:i+j], []byte("scan_lvs = 1")) {
		t.Fatalf("not inside devices {}: %q", out[i:i+j+3])
	}
	v, err := Read(out)
	if err != nil || v.ScanLVs == nil || !*v.ScanLVs || v.UseDevicesFile == nil || *v.UseDevicesFile || len(v.GlobalFilter) != 3 {
		t.Fatalf("read back %+v, %v", v, err)
	}
	again, changed, err := Edit(out, ch)
	if err != nil || changed || !bytes.Equal(again, out) {
		t.Fatalf("second edit changed the file (changed %v, err %v)", changed, err)
	}
	// The stock file sets nothing: its many commented examples are ignored.
	if v, err := Read(src); err != nil || v.ScanLVs != nil || v.GlobalFilter != nil || v.UseDevicesFile != nil {
		t.Fatalf("stock read %+v, %v", v, err)
	}
}

func TestEditPVEShape(t *testing.T) {
	src := pveShaped(t)
	if v, err := Read(src); err != nil || len(v.GlobalFilter) != 3 || v.GlobalFilter[0] != "r|/dev/zd.*|" {
		t.Fatalf("read %+v, %v", v, err)
	}
	// Same filter as Proxmox VE's: nothing to do, not a byte changes.
	out, changed, err := Edit(src, plan.LVMConfChange{GlobalFilter: []string{"r|/dev/zd.*|", "r|/dev/rbd.*|", "r|/dev/nbd.*|"}})
	if err != nil || changed || !bytes.Equal(out, src) {
		t.Fatalf("changed %v err %v", changed, err)
	}
	// keel's filter: replaced in place, Proxmox's marker comment kept.
	ch := plan.LVMConfChange{ScanLVs: ptr(false), GlobalFilter: []string{"r|/dev/zd.*|", "r|/dev/rbd.*|", "r|/dev/nbd.*|", "r|^/dev/bcache[0-9]+$|"}}
	out, changed, err = Edit(src, ch)
	if err != nil || !changed {
		t.Fatalf("changed %v err %v", changed, err)
	}
	tail := string(out[bytes.LastIndex(out, []byte("devices {")):])
	wantTail := "devices {\n" +
		"     # added by pve-manager to avoid scanning ZFS zvols and Ceph rbds\n" +
		"     global_filter=[ \"r|/dev/zd.*|\", \"r|/dev/rbd.*|\", \"r|/dev/nbd.*|\", \"r|^/dev/bcache[0-9]+$|\" ]\n" +
		"}\n"
	if tail != wantTail {
		t.Fatalf("tail\n%s\nwant\n%s", tail, wantTail)
	}
	// scan_lvs, set nowhere, went into the first (stock) devices section.
	first := bytes.Index(out, []byte("\ndevices {\n"))
	end := first + bytes.Index(out[first:], []byte("\n}\n"))
	if !bytes.HasSuffix(out[first:end], []byte("\n\tscan_lvs = 0")) {
		t.Fatalf("scan_lvs not at the end of the first devices section: %q", out[end-40:end+3])
	}
}

func TestEditEveryOccurrence(t *testing.T) {
	// Proxmox VE appends a second section for scan_lvs when the effective
	// value is not 0 (its "comment out existing setting" branch).
	src := []byte("devices {\n\t#scan_lvs = 1\n\tscan_lvs = 1\n}\ndevices {\n     # added by pve-manager to avoid scanning LVM volumes\n     scan_lvs=0\n }\n")
	out, changed, err := Edit(src, plan.LVMConfChange{ScanLVs: ptr(true)})
	if err != nil || !changed {
		t.Fatal(changed, err)
	}
	want := strings.Replace(string(src), "scan_lvs=0", "scan_lvs=1", 1)
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
}

// A global_filter set twice: LVM's config tree takes the last occurrence
// (Read does too), so an earlier one that already holds the wanted filter
// does not make the edit done. The second section is the one pve-manager
// appends (pveShaped), after an admin's section that keel had already set.
func TestEditEveryGlobalFilter(t *testing.T) {
	want := []string{"r|/dev/zd.*|", "r|/dev/rbd.*|"}
	first := "devices {\n\tglobal_filter = [ \"r|/dev/zd.*|\", \"r|/dev/rbd.*|\" ]\n}\n"
	for _, c := range []struct{ name, src string }{
		{"first matches, last differs", first + "devices {\n     # added by pve-manager to avoid scanning ZFS zvols and Ceph rbds\n     global_filter=[\"r|/dev/zd.*|\",\"r|/dev/rbd.*|\",\"r|/dev/nbd.*|\"]\n}\n"},
		{"first differs, last matches", "devices {\n\tglobal_filter = [ \"a|.*|\" ]\n}\n" + first},
	} {
		out, changed, err := Edit([]byte(c.src), plan.LVMConfChange{GlobalFilter: want})
		if err != nil || !changed {
			t.Fatalf("%s: changed %v, err %v", c.name, changed, err)
		}
		if n := strings.Count(string(out), `"r|/dev/zd.*|", "r|/dev/rbd.*|" ]`); n != 2 {
			t.Errorf("%s: %d of 2 occurrences hold the filter:\n%s", c.name, n, out)
		}
		v, err := Read(out)
		if err != nil || !slices.Equal(v.GlobalFilter, want) {
			t.Errorf("%s: effective filter %q (%v), want %q", c.name, v.GlobalFilter, err, want)
		}
	}
}

func TestEditNoDevicesSection(t *testing.T) {
	out, _, err := Edit([]byte("global {\n}"), plan.LVMConfChange{ScanLVs: ptr(false)})
	if err != nil || string(out) != "global {\n}\ndevices {\n\tscan_lvs = 0\n}\n" {
		t.Fatalf("%q %v", out, err)
	}
	out, _, err = Edit([]byte("devices { issue_discards = 1 }\n"), plan.LVMConfChange{ScanLVs: ptr(false)})
	if err != nil || string(out) != "devices { issue_discards = 1 \n\tscan_lvs = 0\n}\n" {
		t.Fatalf("%q %v", out, err)
	}
}

func TestRefusesFilterItCannotParse(t *testing.T) {
	for _, val := range []string{
		`[ "r|/dev/zd.*" ]`,      // no closing delimiter
		`"x|.*|"`,                // neither accept nor reject
		`[ "r|(|" ]`,             // regex does not compile
		`[ "a|.*|" "r|.*|" ]`,    // missing comma
		`[ 5 ]`,                  // not a string
		`[ "r|/dev/\"zd|" ]`,     // escapes
		`[ "r|a|", , "r|b|" ]`,   // empty item
		`[ "a|.*|", "r|sd[a|" ]`, // bad class
	} {
		src := []byte("devices {\n\tglobal_filter = " + val + "\n}\n")
		_, _, err := Edit(src, plan.LVMConfChange{GlobalFilter: []string{"a|.*|"}})
		var fe *FilterError
		if !errors.As(err, &fe) {
			t.Errorf("%s: err %v, want a FilterError", val, err)
			continue
		}
		if !strings.Contains(err.Error(), "will not rewrite") {
			t.Errorf("%s: %v", val, err)
		}
		// Other settings cannot be asserted past a broken filter either:
		// the planner must surface it first.
		if _, _, err := Edit(src, plan.LVMConfChange{ScanLVs: ptr(false), GlobalFilter: []string{"a|.*|"}}); !errors.As(err, &fe) {
			t.Errorf("%s: %v", val, err)
		}
	}
	// A filter keel does not manage is not its business.
	if _, _, err := Edit([]byte("devices {\n\tglobal_filter = [ \"r|(|\" ]\n}\n"), plan.LVMConfChange{ScanLVs: ptr(false)}); err != nil {
		t.Errorf("unmanaged filter blocked scan_lvs: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, src := range []string{"devices {\n", "}\n", "devices { x = \"abc }\n", "devices { x = [ 1, 2 }\n", "devices { = 1 }"} {
		var pe *ParseError
		if _, _, err := Edit([]byte(src), plan.LVMConfChange{ScanLVs: ptr(false)}); !errors.As(err, &pe) {
			t.Errorf("%q: %v", src, err)
		}
	}
	if _, _, err := Edit(nil, plan.LVMConfChange{GlobalFilter: []string{"a|.*"}}); !errors.Is(err, ErrBadEntry) {
		t.Errorf("bad desired entry: %v", err)
	}
}

// cannedRunner answers every command with one result and records the argv.
type cannedRunner struct {
	res  hostio.Result
	ran  []hostio.Cmd
	seen []byte // the candidate lvmconfig was shown
}

func (r *cannedRunner) Run(_ context.Context, c hostio.Cmd) (hostio.Result, error) {
	r.ran = append(r.ran, c)
	if len(c.Args) > 0 && strings.HasPrefix(c.Args[0], "LVM_SYSTEM_DIR=") {
		r.seen, _ = os.ReadFile(filepath.Join(strings.TrimPrefix(c.Args[0], "LVM_SYSTEM_DIR="), "lvm.conf"))
	}
	return r.res, nil
}

func captured(t *testing.T, name string) hostio.Result {
	t.Helper()
	read := func(ext string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name+ext))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	rc, _ := strconv.Atoi(strings.TrimSpace(string(read(".rc"))))
	return hostio.Result{Stdout: read(".out"), Stderr: read(".err"), ExitCode: rc}
}

// stockFile writes the stock file into a temporary directory.
func stockFile(t *testing.T) (dir, path string, src []byte) {
	dir = t.TempDir()
	path = filepath.Join(dir, "lvm.conf")
	src = stock(t)
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, path, src
}

func TestWriterValidatesBacksUpAndReasserts(t *testing.T) {
	dir, path, src := stockFile(t)
	r := &cannedRunner{res: captured(t, "validate-ok")}
	w := &Writer{Path: path, Runner: r, DpkgDir: t.TempDir()}
	ch := plan.LVMConfChange{ScanLVs: ptr(true)}
	if err := w.Apply(context.Background(), ch); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if v, _ := Read(got); v.ScanLVs == nil || !*v.ScanLVs {
		t.Fatal("not written")
	}
	if !bytes.Equal(r.seen, got) {
		t.Fatal("lvmconfig validated something other than what was written")
	}
	if r.ran[0].Name != "env" || r.ran[0].Args[1] != "lvmconfig" || r.ran[0].Args[2] != "--validate" {
		t.Fatalf("validate argv %v", r.ran[0].Argv())
	}
	if bak, _ := os.ReadFile(path + BackupSuffix); !bytes.Equal(bak, src) {
		t.Fatal("backup is not the previous file")
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", st.Mode())
	}
	// Already right: no validation, no write.
	r.ran = nil
	if err := w.Apply(context.Background(), ch); err != nil || len(r.ran) != 0 {
		t.Fatalf("%v, ran %v", err, r.ran)
	}
	// A package upgrade puts the stock file back: asserted again.
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.Apply(context.Background(), ch); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); !bytes.Contains(got, []byte("scan_lvs = 1")) {
		t.Fatal("not re-asserted")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Fatalf("left temporary files: %v", ents)
	}
}

func TestWriterLeavesFileAloneWhenInvalid(t *testing.T) {
	_, path, src := stockFile(t)
	w := &Writer{Path: path, Runner: &cannedRunner{res: captured(t, "validate-bad")}, DpkgDir: t.TempDir()}
	err := w.Apply(context.Background(), plan.LVMConfChange{ScanLVs: ptr(true)})
	if err == nil || !strings.Contains(err.Error(), "LVM configuration invalid") {
		t.Fatalf("err %v", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, src) {
		t.Fatal("file changed")
	}
	if _, err := os.Stat(path + BackupSuffix); !os.IsNotExist(err) {
		t.Fatal("backup written for a rejected candidate")
	}
}

// An entry is written as LVM reads it back: libdevmapper unescapes only \"
// and \\ (dm_unescape_double_quotes), so a control character goes in as
// it is, not as a Go escape LVM would read as other characters, and a
// backslash is doubled; keel reads the file back the same way.
func TestEditWritesEntriesAsLVMReadsThem(t *testing.T) {
	entries := []string{"r|\x7f/dev/nbd[0-9]+$|", "r|^/dev/vd[a-z]\\.|", "r|\t|", "a|.*|"}
	out, changed, err := Edit([]byte("devices {\n}\n"), plan.LVMConfChange{GlobalFilter: entries})
	if err != nil || !changed {
		t.Fatalf("changed %v err %v", changed, err)
	}
	want := "devices {\n\tglobal_filter = [ \"r|\x7f/dev/nbd[0-9]+$|\", \"r|^/dev/vd[a-z]\\\\.|\", \"r|\t|\", \"a|.*|\" ]\n}\n"
	if string(out) != want {
		t.Fatalf("wrote %q, want %q", out, want)
	}
	v, err := Read(out)
	if err != nil || !slicesEqual(v.GlobalFilter, entries) {
		t.Fatalf("read back %q, %v; want %q", v.GlobalFilter, err, entries)
	}
}

// A number put in place of a string or a list that a word follows without
// a space stays apart from that word.
func TestEditKeepsValueApartFromNextWord(t *testing.T) {
	src := []byte("devices { scan_lvs=\"x\"y = 1 use_devicesfile=[1]z=2 }\n")
	out, _, err := Edit(src, plan.LVMConfChange{ScanLVs: ptr(false), UseDevicesFile: ptr(false)})
	if err != nil {
		t.Fatal(err)
	}
	if want := "devices { scan_lvs=0 y = 1 use_devicesfile=0 z=2 }\n"; string(out) != want {
		t.Fatalf("wrote %q, want %q", out, want)
	}
}

// activation/raid_fault_policy goes into the stock file's activation
// section (where lvm.conf(5) documents it), read back as set; a file that
// states another value has that value's bytes replaced; a file without
// either section gets both, in one edit each.
func TestEditRaidFaultPolicy(t *testing.T) {
	src := stock(t)
	ch := plan.LVMConfChange{RaidFaultPolicy: "allocate"}
	out, changed, err := Edit(src, ch)
	if err != nil || !changed {
		t.Fatalf("changed %v err %v", changed, err)
	}
	ins, ok := onlyInserted(src, out)
	if !ok || ins != "\traid_fault_policy = \"allocate\"\n" {
		t.Fatalf("inserted %q (one insertion: %v)", ins, ok)
	}
	i := bytes.Index(out, []byte("\nactivation {\n"))
	j := bytes.Index(out[i:], []byte("\n}\n"))
	if i < 0 || !bytes.Contains(out[i:i+j], []byte("raid_fault_policy = \"allocate\"")) {
		t.Fatal("not inside activation {}")
	}
	if v, err := Read(out); err != nil || v.RaidFaultPolicy != "allocate" {
		t.Fatalf("read back %+v, %v", v, err)
	}
	if again, changed, err := Edit(out, ch); err != nil || changed || !bytes.Equal(again, out) {
		t.Fatalf("second edit changed the file (changed %v, err %v)", changed, err)
	}
	warn := []byte("activation {\n\traid_fault_policy = \"warn\" # the default\n}\n")
	out, _, err = Edit(warn, ch)
	if err != nil || string(out) != "activation {\n\traid_fault_policy = \"allocate\" # the default\n}\n" {
		t.Fatalf("%q %v", out, err)
	}
	out, _, err = Edit([]byte("global {\n}\n"), plan.LVMConfChange{ScanLVs: ptr(true), RaidFaultPolicy: "warn"})
	if err != nil || string(out) != "global {\n}\ndevices {\n\tscan_lvs = 1\n}\nactivation {\n\traid_fault_policy = \"warn\"\n}\n" {
		t.Fatalf("%q %v", out, err)
	}
	// A policy lvmlocal.conf states is written there.
	main, local, err := Route(ch, []byte("activation {\n\traid_fault_policy = \"warn\"\n}\n"))
	if err != nil || main.RaidFaultPolicy != "" || local.RaidFaultPolicy != "allocate" {
		t.Fatalf("route: main %+v local %+v, %v", main, local, err)
	}
}
