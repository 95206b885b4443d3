package probes

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
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
		s, err := ReadSnapshotFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		cmd := func(c Cmd) {
			if r, ok := s.Commands[c.String()]; ok && len(r.Result.Stdout) > 0 {
				seeds = append(seeds, r.Result.Stdout)
			}
		}
		switch target {
		case "FuzzParseFullReport":
			cmd(fullReportCmd)
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
				if r := s.Files[k]; r.Op == OpReadAt {
					seeds = append(seeds, r.Data)
				}
			}
		case "FuzzParseTargetArgs":
			for _, c := range []Cmd{dmTableCmd, dmStatusCmd} {
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
				case r.Path == storageCfgPath || r.Path == meminfoPath || r.Path == cpuOnlinePath:
					seeds = append([][]byte{r.Data}, seeds...)
				case r.Op == OpFile && strings.HasPrefix(r.Path, "/sys/"):
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
func dmLinesByScanner(b []byte) (map[string][]DMLine, error) {
	out := map[string][]DMLine{}
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
		l := DMLine{Start: start, Length: length, Target: f[2]}
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
		_, err := parseVDOTable(1, s)
		errMust(t, err, "dmsetup table: vdo: ")
		_, err = parseVDOStatus(s)
		errMust(t, err, "dmsetup status: vdo: ")
		_, err = parseThinPoolStatus(s)
		errMust(t, err, "dmsetup status: thin-pool: ")
	})
}

func FuzzParseVDOStats(f *testing.F) {
	addSeeds(f, "FuzzParseVDOStats")
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := parseVDOStats(b)
		errMust(t, err, "dmsetup message stats: ")
	})
}

func FuzzParseLVMConfig(f *testing.F) {
	addSeeds(f, "FuzzParseLVMConfig")
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := parseLVMConfig(b)
		errMust(t, err, "lvmconfig: ")
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
		if l == nil {
			l = &VDOLayout{}
		}
		errMust(t, decodeVDOSuperBlock(b, l), "vdo super block: ")
	})
}

func FuzzParseSysfs(f *testing.F) {
	addSeeds(f, "FuzzParseSysfs")
	f.Fuzz(func(t *testing.T, b []byte) {
		s := string(b)
		_, err := parseHumanBytes(s)
		_ = err
		_, _ = parseCacheMode(s)
		_, err = parseCPUList(b)
		errMust(t, err, "cpu list")
		_, err = parseMeminfo(b)
		errMust(t, err, "/proc/meminfo: ")
		_, err = parseStorageCfg(b)
		errMust(t, err, "storage.cfg: ")
		buildBcache("bcache0", map[string]string{"cache_mode": s, "sequential_cutoff": s, "writeback_percent": s, "dirty_data": s}, s)
		buildCacheSet("x", map[string]string{"errors": s, "journal_delay_ms": s})
	})
}

func FuzzParseSnapshot(f *testing.F) {
	addSeeds(f, "FuzzParseSnapshot")
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSnapshot(b)
		if err != nil {
			return
		}
		// What parses must write and parse back to the same records.
		text, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		s2, err := ParseSnapshot(text)
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		if len(s2.Commands) != len(s.Commands) || len(s2.Files) != len(s.Files) {
			t.Errorf("round trip: %d/%d commands, %d/%d files", len(s2.Commands), len(s.Commands), len(s2.Files), len(s.Files))
		}
	})
}
