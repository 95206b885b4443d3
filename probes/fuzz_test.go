package probes

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
)

// The fuzz targets start from real guest output: the snapshots' recorded
// bytes (added with f.Add) and the committed corpus in testdata/fuzz, which
// `go test -run TestWriteFuzzCorpus -write-fuzz-corpus ./probes` regenerates
// from the snapshots.

var writeFuzzCorpus = flag.Bool("write-fuzz-corpus", false, "rewrite testdata/fuzz seed corpora from the snapshots")

// fuzzSeeds returns real inputs for a fuzz target, from every snapshot.
func fuzzSeeds(tb testing.TB, target string) [][]byte {
	tb.Helper()
	files, _ := filepath.Glob("testdata/snapshots/*.txtar")
	var seeds [][]byte
	for _, f := range files {
		s, err := hostio.ReadSnapshotFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		cmd := func(c hostio.Cmd) {
			if r, ok := s.Commands[c.String()]; ok && len(r.Result.Stdout) > 0 {
				seeds = append(seeds, r.Result.Stdout)
			}
		}
		switch target {
		case "FuzzParseFullReport":
			cmd(fullReportCmd)
			old, _ := legacyReportCmd(fullReportCmd)
			cmd(old)
		case "FuzzParseDMLines":
			cmd(dmTableCmd)
			cmd(dmStatusCmd)
		case "FuzzParseVDOStats":
			for _, k := range sortedKeys(s.Commands) {
				if strings.HasSuffix(k, " 0 stats") {
					seeds = append(seeds, s.Commands[k].Result.Stdout)
				}
			}
		case "FuzzParseLVMConfig":
			cmd(lvmConfigCmd)
		case "FuzzDecodeVDOBlocks":
			for _, k := range sortedKeys(s.Files) {
				if r := s.Files[k]; r.Op == hostio.OpReadAt {
					seeds = append(seeds, r.Data)
				}
			}
		case "FuzzParseTargetArgs":
			for _, c := range []hostio.Cmd{dmTableCmd, dmStatusCmd} {
				lines, _ := parseDMLines(c.String(), s.Commands[c.String()].Result.Stdout)
				for _, name := range sortedKeys(lines) {
					for _, l := range lines[name] {
						seeds = append(seeds, []byte(l.Args))
					}
				}
			}
		case "FuzzParseSysfs":
			for _, k := range sortedKeys(s.Files) {
				r := s.Files[k]
				switch {
				case r.Path == DefaultPVEStorageCfg || r.Path == meminfoPath || r.Path == cpuOnlinePath:
					seeds = append([][]byte{r.Data}, seeds...)
				case r.Op == hostio.OpFile && strings.HasPrefix(r.Path, "/sys/"):
					seeds = append(seeds, r.Data)
				}
			}
		case "FuzzParseSnapshot":
			raw, err := os.ReadFile(f)
			if err != nil {
				tb.Fatal(err)
			}
			seeds = append(seeds, raw)
		default:
			tb.Fatalf("no seeds for %s", target)
		}
	}
	return seeds
}

var fuzzTargets = []string{"FuzzParseFullReport", "FuzzParseDMLines", "FuzzParseVDOStats", "FuzzParseLVMConfig",
	"FuzzDecodeVDOBlocks", "FuzzParseTargetArgs", "FuzzParseSysfs", "FuzzParseSnapshot"}

// TestWriteFuzzCorpus writes testdata/fuzz/<target>/ from the snapshots when
// -write-fuzz-corpus is given; otherwise it checks the corpus exists.
func TestWriteFuzzCorpus(t *testing.T) {
	for _, target := range fuzzTargets {
		dir := filepath.Join("testdata/fuzz", target)
		if !*writeFuzzCorpus {
			if ents, err := os.ReadDir(dir); err != nil || len(ents) == 0 {
				t.Errorf("%s: no committed seed corpus (%v)", dir, err)
			}
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		seeds := fuzzSeeds(t, target)
		seen := map[string]bool{}
		n := 0
		for _, s := range seeds {
			// Sysfs values repeat a lot; keep distinct ones, and at most 40.
			if len(s) > 16<<10 {
				// Keep the committed corpus small: every whole input is
				// already a seed through f.Add; commit its first lines.
				cut := s[:16<<10]
				s = cut[:strings.LastIndexByte(string(cut), '\n')+1]
			}
			if seen[string(s)] || n >= 24 {
				continue
			}
			seen[string(s)] = true
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(s)))
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("real-%02d", n)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
}

func addSeeds(f *testing.F, target string) {
	for _, s := range fuzzSeeds(f, target) {
		f.Add(s)
	}
}

// errMust fails when a parse error does not start with the command's name.
func errMust(t *testing.T, err error, prefix string) {
	if err != nil && !strings.HasPrefix(err.Error(), prefix) {
		t.Errorf("error %q does not start with %q", err, prefix)
	}
}

func FuzzParseFullReport(f *testing.F) {
	addSeeds(f, "FuzzParseFullReport")
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := parseFullReport(b)
		errMust(t, err, "lvm fullreport: ")
		// Built while it streams, the report gives the same objects.
		so, serr, _ := streamBuilt(b, func() int { return 7 })
		if fmt.Sprint(serr) != fmt.Sprint(err) || !reflect.DeepEqual(so, o) {
			t.Errorf("built as it streams: %v, whole: %v, or other objects", serr, err)
		}
		if err == nil {
			for k, lv := range o.LVs {
				if k != lv.VG+"/"+lv.Name {
					t.Errorf("lv key %q for %s/%s", k, lv.VG, lv.Name)
				}
			}
		}
	})
}

func FuzzParseDMLines(f *testing.F) {
	addSeeds(f, "FuzzParseDMLines")
	for _, s := range []string{"", "\n", "a: 0 1 linear\r\n", "a: 0 1 linear\r\r\n", "a:  0 1 t  x y \n", "a: 0 1\n",
		"a: 0 1 t\na: 1 2 u v\nb: 0 1 t\na: 3 4 w\n", "No devices found\n", " \t\n", "a: x 1 t"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parseDMLines("dmsetup table", b)
		errMust(t, err, "dmsetup table: ")
		want, werr := dmLinesByScanner(b)
		if (err != nil) != (werr != nil) || err == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%q: parseDMLines gives %v, %v; reading line by line gives %v, %v", b, got, err, want, werr)
		}
	})
}

// dmLinesByScanner is parseDMLines written plainly (bufio.Scanner,
// strings.SplitN), the reference the fuzz target holds it to.
func dmLinesByScanner(b []byte) (map[string][]model.DMLine, error) {
	out := map[string][]model.DMLine{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, maxDMLine)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || line == "No devices found" {
			continue
		}
		name, rest, ok := strings.Cut(line, ": ")
		if !ok {
			return nil, errors.New("no name")
		}
		f := strings.SplitN(strings.TrimSpace(rest), " ", 4)
		if len(f) < 3 {
			return nil, errors.New("too few fields")
		}
		start, err1 := strconv.ParseUint(f[0], 10, 64)
		length, err2 := strconv.ParseUint(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, errors.New("not numbers")
		}
		l := model.DMLine{Start: start, Length: length, Target: f[2]}
		if len(f) == 4 {
			l.Args = f[3]
		}
		out[name] = append(out[name], l)
	}
	return out, sc.Err()
}

func FuzzParseTargetArgs(f *testing.F) {
	addSeeds(f, "FuzzParseTargetArgs")
	f.Fuzz(func(t *testing.T, b []byte) {
		s := string(b)
		fields := strings.Fields(s)
		num := func(v string) uint64 {
			n, _ := strconv.ParseUint(v, 10, 64)
			return n
		}
		vt, err := parseVDOTable(1, s)
		errMust(t, err, "dmsetup table: vdo: ")
		if err == nil {
			// The optional arguments are the key/value pairs after the six
			// fixed fields; the numbers read back what the pairs say.
			opts := map[string]string{}
			for i := 6; i+1 < len(fields); i += 2 {
				opts[fields[i]] = fields[i+1]
			}
			dedupe := true // dm-vdo's default
			if v, ok := opts["deduplication"]; ok {
				dedupe = v == "on"
			}
			want := func(key string, def uint64) uint64 {
				if v, ok := opts[key]; ok {
					return num(v)
				}
				return def
			}
			if !reflect.DeepEqual(vt.Options, opts) || vt.StorageDevice != fields[1] || vt.PhysicalBlocks != num(fields[2]) ||
				vt.MaxDiscard != want("maxDiscard", 1) || uint64(vt.Logical) != want("logical", 0) ||
				uint64(vt.Physical) != want("physical", 0) || uint64(vt.Hash) != want("hash", 0) || uint64(vt.CPU) != want("cpu", 1) ||
				vt.Deduplication != dedupe {
				t.Errorf("%q: vdo table %+v does not read back its fields", s, vt)
			}
		}
		vs, err := model.ParseVDOStatus(s)
		errMust(t, err, "dmsetup status: vdo: ")
		if err == nil && (vs.Device != fields[0] || vs.Mode != fields[1] || vs.IndexState != fields[3] ||
			vs.UsedBlocks != num(fields[5]) || vs.TotalBlocks != num(fields[6])) {
			t.Errorf("%q: vdo status %+v does not read back its fields", s, vs)
		}
		ts, err := model.ParseThinPoolStatus(s)
		errMust(t, err, "dmsetup status: thin-pool: ")
		if err == nil && !ts.Failed {
			meta, data := strings.Split(fields[1], "/"), strings.Split(fields[2], "/")
			if ts.TransactionID != num(fields[0]) || ts.UsedMetaBlocks != num(meta[0]) || ts.MetaBlocks != num(meta[1]) ||
				ts.UsedDataBlocks != num(data[0]) || ts.DataBlocks != num(data[1]) ||
				ts.OutOfDataSpace != (fields[4] == "out_of_data_space") || ts.ReadOnly != (fields[4] == "ro") ||
				ts.NeedsCheck != (fields[7] == "needs_check") {
				t.Errorf("%q: thin-pool status %+v does not read back its fields", s, ts)
			}
		}
	})
}

func FuzzParseVDOStats(f *testing.F) {
	addSeeds(f, "FuzzParseVDOStats")
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseVDOStats(b)
		errMust(t, err, "dmsetup message stats: ")
		if err != nil {
			return
		}
		// Each named field is the flattened leaf of that name (0 when absent).
		for key, got := range map[string]uint64{
			"dataBlocksUsed": st.DataBlocksUsed, "overheadBlocksUsed": st.OverheadBlocksUsed,
			"logicalBlocksUsed": st.LogicalBlocksUsed, "physicalBlocks": st.PhysicalBlocks, "logicalBlocks": st.LogicalBlocks,
			"completeRecoveries": st.CompleteRecoveries, "readOnlyRecoveries": st.ReadOnlyRecoveries,
			"hashLock.dedupeAdviceValid": st.DedupeAdviceValid, "hashLock.dedupeAdviceStale": st.DedupeAdviceStale,
			"dedupeAdviceTimeouts": st.DedupeAdviceTimeouts, "errors.invalidAdvicePBNCount": st.InvalidAdvicePBN,
			"errors.noSpaceErrorCount": st.NoSpaceErrors, "errors.readOnlyErrorCount": st.ReadOnlyErrors,
		} {
			want := uint64(0)
			if v, ok := st.Values[key]; ok {
				want, _ = strconv.ParseUint(v, 10, 64)
			}
			if got != want {
				t.Errorf("%q: field %s = %d, its leaf %q", b, key, got, st.Values[key])
			}
		}
		if st.Mode != st.Values["mode"] {
			t.Errorf("%q: mode %q, leaf %q", b, st.Mode, st.Values["mode"])
		}
		for k, v := range st.Values {
			if v != strings.TrimSpace(v) || !strings.Contains(string(b), v) || strings.HasPrefix(k, ".") || strings.HasSuffix(k, ".") {
				t.Errorf("%q: leaf %q = %q is not a trimmed value of the input under a dotted key", b, k, v)
			}
		}
	})
}

func FuzzParseLVMConfig(f *testing.F) {
	addSeeds(f, "FuzzParseLVMConfig")
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseLVMConfig(b)
		errMust(t, err, "lvmconfig: ")
		if err != nil {
			return
		}
		// The same text inside one more section gives the same values
		// under that section's name.
		wrapped, err := parseLVMConfig([]byte("outer {\n" + string(b) + "\n}\n"))
		if err != nil {
			t.Fatalf("%q parses alone but not inside a section: %v", b, err)
		}
		want := map[string]string{}
		for k, v := range m {
			want["outer/"+k] = v
			if v != strings.TrimSpace(v) {
				t.Errorf("%q: value %q of %s not trimmed", b, v, k)
			}
		}
		if len(wrapped) != len(want) {
			t.Errorf("%q inside a section: %d keys, want %d", b, len(wrapped), len(want))
		}
		for k, v := range want {
			if got, ok := wrapped[k]; !ok || got != v {
				t.Errorf("inside a section: %s = %q (present %v), want %q", k, got, ok, v)
				break
			}
		}
	})
}

func FuzzDecodeVDOBlocks(f *testing.F) {
	addSeeds(f, "FuzzDecodeVDOBlocks")
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := decodeVDOGeometry(b)
		errMust(t, err, "vdo geometry: ")
		if err == nil && l.Index.First > l.Index.Last+1 {
			t.Errorf("index range %+v", l.Index)
		}
		if err == nil {
			// The nonce is the field at 0x20; a geometry block long enough
			// to hold its CRC-32 refuses a changed nonce.
			if l.Nonce != binary.LittleEndian.Uint64(b[0x20:]) {
				t.Errorf("nonce %#x, field %#x", l.Nonce, binary.LittleEndian.Uint64(b[0x20:]))
			}
			crcAt := 0x40 + 24 + 9
			if binary.LittleEndian.Uint32(b[12:]) == 4 {
				crcAt = 0x38 + 24 + 9
			}
			if len(b) >= crcAt+4 {
				bad := bytes.Clone(b)
				bad[0x20] ^= 1
				if _, err := decodeVDOGeometry(bad); err == nil || !strings.Contains(err.Error(), "checksum") {
					t.Errorf("geometry with a changed nonce: %v, want a checksum error", err)
				}
			}
		}
		if l == nil {
			l = &model.VDOLayout{}
		}
		errMust(t, decodeVDOSuperBlock(b, l), "vdo super block: ")
	})
}

func FuzzParseSysfs(f *testing.F) {
	addSeeds(f, "FuzzParseSysfs")
	f.Fuzz(func(t *testing.T, b []byte) {
		s := string(b)
		hn, herr := parseHumanBytes(s)
		if herr == nil && hn < 1<<62 {
			// bch_hprint of the value parses back to at most the value, and
			// short of it by less than a tenth of the printed unit plus one
			// unit below it (the print truncates to one decimal).
			p := model.Hprint(int64(hn))
			back, err := parseHumanBytes(p)
			unit := uint64(1) << (10 * (strings.IndexByte("?kMGTPEZY", p[len(p)-1])))
			if err != nil || back > hn+1 || hn-min(hn, back) > unit/10+unit>>10+1 {
				t.Errorf("%q = %d; Hprint %q parses back to %d (%v)", s, hn, p, back, err)
			}
		}
		if m, err := parseCacheMode(s); err == nil && (!strings.Contains(s, "["+m+"]") || strings.Contains(m, "]")) {
			t.Errorf("%q: cache mode %q is not the bracketed choice", s, m)
		}
		n, err := parseCPUList(b)
		errMust(t, err, "cpu list")
		if err == nil && n < 1<<20 {
			// A list twice over counts twice the CPUs.
			if n2, err := parseCPUList([]byte(strings.TrimSpace(s) + "," + strings.TrimSpace(s))); err != nil || n2 != 2*n || n < 1 {
				t.Errorf("%q counts %d CPUs, twice over %d (%v)", s, n, n2, err)
			}
		}
		mem, err := parseMeminfo(b)
		errMust(t, err, "/proc/meminfo: ")
		if err == nil {
			// The last MemTotal and MemAvailable lines, in bytes.
			want := map[string]uint64{}
			for _, line := range strings.Split(s, "\n") {
				k, v, _ := strings.Cut(line, ":")
				if f := strings.Fields(v); (k == "MemTotal" || k == "MemAvailable") && len(f) > 0 {
					want[k], _ = strconv.ParseUint(f[0], 10, 64)
					if len(f) > 1 && f[1] == "kB" {
						want[k] *= 1024
					}
				}
			}
			if mem.TotalBytes != want["MemTotal"] || mem.AvailableBytes != want["MemAvailable"] {
				t.Errorf("%q: meminfo %+v, want %v", s, mem, want)
			}
		}
		pve, err := parseStorageCfg(b)
		errMust(t, err, "storage.cfg: ")
		if err == nil {
			// One storage per unindented line; the named fields are options.
			heads := 0
			for _, line := range strings.Split(s, "\n") {
				if tl := strings.TrimSpace(line); tl != "" && !strings.HasPrefix(tl, "#") && line[0] != ' ' && line[0] != '\t' {
					heads++
				}
			}
			if len(pve.Storages) != heads {
				t.Errorf("%q: %d storages, %d header lines", s, len(pve.Storages), heads)
			}
			for _, st := range pve.Storages {
				if st.VG != st.Options["vgname"] || st.Saferemove != (st.Options["saferemove"] == "1") ||
					st.SaferemoveDiscard != (st.Options["saferemove_discard"] == "1") {
					t.Errorf("%q: storage %+v does not match its options", s, st)
				}
			}
		}
		// A malformed sysfs value is an error naming the field, never a
		// silent zero; a good one is the parsed value.
		bc := buildBcache("bcache0", map[string]string{"cache_mode": s, "sequential_cutoff": s, "writeback_percent": s, "dirty_data": s}, s)
		named := func(field string) bool {
			for _, e := range bc.Errors {
				if strings.Contains(e, ": "+field+": ") {
					return true
				}
			}
			return false
		}
		if named("sequential_cutoff") != (herr != nil) || herr == nil && (bc.SequentialCutoff != hn || bc.DirtyData != hn) {
			t.Errorf("%q: sequential_cutoff %d, errors %q; parseHumanBytes %d, %v", s, bc.SequentialCutoff, bc.Errors, hn, herr)
		}
		if wp, err := strconv.ParseUint(s, 10, 64); named("writeback_percent") != (err != nil) || err == nil && uint64(bc.WritebackPercent) != wp && wp <= 1<<31 {
			t.Errorf("%q: writeback_percent %d, errors %q", s, bc.WritebackPercent, bc.Errors)
		}
		if _, err := parseCacheMode(s); named("cache_mode") != (err != nil) {
			t.Errorf("%q: cache_mode %q, errors %q", s, bc.CacheMode, bc.Errors)
		}
		cs := buildCacheSet("x", map[string]string{"errors": s, "journal_delay_ms": s})
		if jd, err := strconv.ParseUint(s, 10, 64); (len(cs.Errors) > 0) != (err != nil) || err == nil && cs.JournalDelayMS != jd {
			t.Errorf("%q: journal_delay_ms %d, errors %q", s, cs.JournalDelayMS, cs.Errors)
		}
	})
}

func FuzzParseSnapshot(f *testing.F) {
	addSeeds(f, "FuzzParseSnapshot")
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := hostio.ParseSnapshot(b)
		if err != nil {
			return
		}
		// What parses must write and parse back to the same records.
		text, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		s2, err := hostio.ParseSnapshot(text)
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		if s2.Host != s.Host || s2.Version != s.Version || !s2.Time.Equal(s.Time) ||
			len(s2.Commands) != len(s.Commands) || len(s2.Files) != len(s.Files) {
			t.Fatalf("round trip: header or record counts changed: %q %q %v, %d commands, %d files; was %q %q %v, %d, %d",
				s2.Host, s2.Version, s2.Time, len(s2.Commands), len(s2.Files), s.Host, s.Version, s.Time, len(s.Commands), len(s.Files))
		}
		for k, rec := range s.Commands {
			if !reflect.DeepEqual(s2.Commands[k], rec) {
				t.Errorf("round trip changed command %q:\n got %+v\nwant %+v", k, s2.Commands[k], rec)
			}
		}
		for k, rec := range s.Files {
			if !reflect.DeepEqual(s2.Files[k], rec) {
				t.Errorf("round trip changed file record %q:\n got %+v\nwant %+v", k, s2.Files[k], rec)
			}
		}
	})
}
