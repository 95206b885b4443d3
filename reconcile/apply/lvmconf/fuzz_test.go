package lvmconf

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/keel-storage/keel/lvm/conffile"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/rogpeppe/go-internal/txtar"
)

// seedConfs returns every distinct /etc/lvm/lvm.conf the node snapshots
// recorded (probes' fixtures and the examples), the Proxmox VE shape, and
// small files for the corners of the grammar.
func seedConfs(t testing.TB) [][]byte {
	t.Helper()
	var snaps []string
	for _, glob := range []string{"../../../probes/testdata/snapshots/*.txtar", "../../../examples/nodes/*.txtar"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, m...)
	}
	seen := map[string]bool{}
	var out [][]byte
	add := func(b []byte) {
		if !seen[string(b)] {
			seen[string(b)] = true
			out = append(out, b)
		}
	}
	for _, s := range snaps {
		ar, err := txtar.ParseFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range ar.Files {
			if f.Name == "file/etc/lvm/lvm.conf" {
				add(f.Data)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no snapshot records an lvm.conf")
	}
	add(pveShaped(t))
	for _, s := range []string{
		"",
		"devices {\n}\n",
		"devices {\n\tscan_lvs = 0\n}\n",
		"devices{scan_lvs=1}",
		"# no newline at the end",
		"global { use_lvmetad = 0 }\ndevices { global_filter = [ \"a|.*|\" ] }\ndevices { scan_lvs = 1 use_devicesfile = 1 }\n",
		"devices {\n\tglobal_filter = \"r|/dev/zd.*|\"\n\tfilter = [ \"a|.*|\" ]\n}\n",
		"devices { scan_lvs = \"x\" use_devicesfile = [ 1, 0 ] }\n",
		"activation { devices { scan_lvs = 1 } }\n",
	} {
		add([]byte(s))
	}
	return out
}

// fuzzChange decodes the fuzzer's choice of settings: for each boolean,
// 0 leaves it alone, 1 asks false, 2 asks true; filter 0 leaves the filter
// alone, 1 asks keel's usual one, 2 an empty one, 3 entry (when it is a
// well-formed entry) before "a|.*|".
func fuzzChange(scan, use, filter uint8, entry string) plan.LVMConfChange {
	b := func(n uint8) *bool {
		switch n % 3 {
		case 1:
			return ptr(false)
		case 2:
			return ptr(true)
		}
		return nil
	}
	ch := plan.LVMConfChange{ScanLVs: b(scan), UseDevicesFile: b(use)}
	switch filter % 4 {
	case 1:
		ch.GlobalFilter = []string{"r|^/dev/zd.*|", "r|^/dev/bcache[0-9]+$|", "a|.*|"}
	case 2:
		ch.GlobalFilter = []string{}
	case 3:
		if CheckEntry(entry) == nil {
			ch.GlobalFilter = []string{entry, "a|.*|"}
		}
	}
	return ch
}

// requested maps each setting ch asks for to its path.
func requested(ch plan.LVMConfChange) map[string]bool {
	r := map[string]bool{}
	if ch.ScanLVs != nil {
		r["devices/scan_lvs"] = true
	}
	if ch.UseDevicesFile != nil {
		r["devices/use_devicesfile"] = true
	}
	if ch.GlobalFilter != nil {
		r["devices/global_filter"] = true
	}
	return r
}

// skeleton is src with the value of every assignment of a requested
// setting replaced by a marker naming the setting: what Edit must keep.
// A space right after a value is left out: Edit adds one where its value
// would otherwise run into a word that follows.
func skeleton(src []byte, p *conffile.File, req map[string]bool) string {
	var b strings.Builder
	at := 0
	for _, a := range p.Assigns {
		if !req[a.Path] {
			continue
		}
		b.Write(src[at:a.ValStart])
		b.WriteString("\x00" + a.Path + "\x00")
		at = a.ValEnd
		if at < len(src) && src[at] == ' ' {
			at++
		}
	}
	b.Write(src[at:])
	return b.String()
}

// Edit on any file, for any settings: it fails only on a file it cannot
// parse or a filter it cannot read; otherwise every occurrence of each
// setting asked for holds the value asked for, nothing else changes (the
// bytes around those values are kept, new assignments are only inserted),
// the result parses, and editing it again changes nothing.
func FuzzEdit(f *testing.F) {
	for _, src := range seedConfs(f) {
		f.Add(src, uint8(2), uint8(1), uint8(1), "")
		f.Add(src, uint8(1), uint8(0), uint8(3), "r|^/dev/nbd[0-9]+$|")
		f.Add(src, uint8(0), uint8(2), uint8(2), "")
	}
	f.Fuzz(func(t *testing.T, src []byte, scan, use, filter uint8, entry string) {
		ch := fuzzChange(scan, use, filter, entry)
		out, changed, err := Edit(src, ch)
		if err != nil {
			var pe *ParseError
			var fe *FilterError
			switch {
			case errors.As(err, &pe):
				if _, perr := conffile.Parse(src); perr == nil {
					t.Fatalf("Edit: %v, but the file parses", err)
				}
			case errors.As(err, &fe):
				if _, rerr := Read(src); rerr == nil {
					t.Fatalf("Edit: %v, but Read takes the filter", err)
				}
			default:
				t.Fatalf("Edit: unexpected error %v", err)
			}
			return
		}
		if !changed && !bytes.Equal(out, src) {
			t.Fatal("Edit reports no change but changed the file")
		}
		po, err := conffile.Parse(out)
		if err != nil {
			t.Fatalf("the edited file does not parse: %v\n--- src\n%s\n--- out\n%s", err, excerpt(src), excerpt(out))
		}
		v, err := Read(out)
		if err != nil {
			t.Fatalf("the edited file does not read: %v", err)
		}
		eqBool := func(got, want *bool) bool { return want == nil || got != nil && *got == *want }
		if !eqBool(v.ScanLVs, ch.ScanLVs) || !eqBool(v.UseDevicesFile, ch.UseDevicesFile) ||
			ch.GlobalFilter != nil && !slicesEqual(v.GlobalFilter, ch.GlobalFilter) {
			t.Fatalf("read back %+v, asked %+v", v, ch)
		}
		// Every occurrence, not only the last one Read returns.
		req := requested(ch)
		for _, a := range po.Assigns {
			if !req[a.Path] {
				continue
			}
			text := string(out[a.ValStart:a.ValEnd])
			if a.Path == "devices/global_filter" {
				got, err := filterOf(out, a)
				if err != nil || !slicesEqual(got, ch.GlobalFilter) {
					t.Fatalf("%s = %s, asked %q (%v)", a.Path, text, ch.GlobalFilter, err)
				}
				continue
			}
			want := ch.ScanLVs
			if a.Path == "devices/use_devicesfile" {
				want = ch.UseDevicesFile
			}
			n, err := strconv.Atoi(text)
			if a.IsList || err != nil || (n != 0) != *want {
				t.Fatalf("%s = %s, asked %v", a.Path, text, *want)
			}
		}
		// Outside the values asked for, the bytes are src's, with one
		// insertion of the settings src lacks, on lines of their own (a
		// marker cannot be told from a NUL in the file: those files are
		// checked above only).
		if bytes.IndexByte(src, 0) < 0 {
			ps, _ := conffile.Parse(src)
			ins, ok := onlyInserted([]byte(skeleton(src, ps, req)), []byte(skeleton(out, po, req)))
			if !ok {
				t.Fatalf("bytes outside the edited values changed:\n--- src\n%s\n--- out\n%s", excerpt(src), excerpt(out))
			}
			rest, missing := ins, 0
			for path := range req {
				if slices.ContainsFunc(ps.Assigns, func(a conffile.Assignment) bool { return a.Path == path }) {
					continue
				}
				missing++
				kv := strings.TrimPrefix(path, "devices/") + " = \x00" + path + "\x00"
				if strings.Count(rest, kv) != 1 {
					t.Fatalf("inserted %q: want %s once", ins, path)
				}
				rest = strings.Replace(rest, kv, "", 1)
			}
			rest = strings.NewReplacer("devices {", "", "}", "").Replace(rest)
			if missing == 0 && ins != "" || strings.Trim(rest, "\t\n") != "" {
				t.Fatalf("inserted %q: more than the settings src lacks", ins)
			}
		}
		again, changed, err := Edit(out, ch)
		if err != nil || changed || !bytes.Equal(again, out) {
			t.Fatalf("a second edit changed the file (changed %v, err %v)", changed, err)
		}
	})
}

// excerpt quotes b, or its start and end when it is long.
func excerpt(b []byte) string {
	const n = 300
	if len(b) <= 2*n {
		return strconv.Quote(string(b))
	}
	return strconv.Quote(string(b[:n])) + " ... " + strconv.Quote(string(b[len(b)-n:]))
}
