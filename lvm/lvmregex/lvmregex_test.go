package lvmregex

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestCheck gives LVM's verdict on single patterns; the e2e corpus
// (e2e/lvmfilter/corpus.txt) checks the same verdicts against lvm itself.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		pattern string
		lvmOK   bool
		msg     string
	}{
		{"/dev/mapper/.*-(vm|base)--[0-9]+--disk--[0-9]+", true, ""},
		{"^/dev/sd[a-z]$", true, ""},
		{"[z-a]", true, ""},
		{"a**", true, ""},
		{`/dev/sd\d+`, true, ""},
		{"a()", true, ""},
		{"a)", true, ""},
		{"a(b|)", true, ""},
		{"(?:[0-9]+)", false, "missing ')'"},
		{"^/dev/zd(?:[0-9]+)", false, "missing ')'"},
		{"/dev/(sdx|)$", false, "badly formed 'or'"},
		{"a|", false, "badly formed 'or'"},
		{"()", false, "missing ')'"},
		{"a()b", false, "missing ')'"},
		{"[abc", false, ""},
		{`a\`, false, ""},
		{"*a", false, ""},
	} {
		err := Check(c.pattern)
		if (err == nil) != c.lvmOK {
			t.Errorf("Check(%q) = %v, want LVM ok %v", c.pattern, err, c.lvmOK)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Check(%q) = %v, want %q in it", c.pattern, err, c.msg)
		}
	}
}

func TestCompileRefusesTraps(t *testing.T) {
	for pattern, want := range map[string]string{
		`/dev/sd\d+`:        "write [0-9]",
		`/dev/sd[a-z]{2}`:   "repeat the item",
		`[[:digit:]]`:       "write [0-9]",
		`[]a]`:              "empty set",
		`a)`:                "do not balance",
		`a(b|)`:             "drops part of it",
		`(?:x)`:             "no (?...) groups",
		`/dev/(sdx|)$`:      "non-empty",
		"/dev/sd\x7f":       "printable ASCII",
		`/dev/mapper/foo\b`: "word boundary",
	} {
		_, err := Compile(pattern)
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(err.Error(), want) {
			t.Errorf("Compile(%q) = %v, want an *Error saying %q", pattern, err, want)
		}
	}
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"/dev/zd.*", "/dev/zd0", true},
		{"/dev/zd.*", "/dev/sda", false},
		{"^/dev/sd[a-z]$", "/dev/sda", true},
		{"^/dev/sd[a-z]$", "/dev/sda1", false},
		{"^/dev/sd[a-z]$", "x/dev/sda", false},
		{"sda", "/dev/sda1", true},      // anywhere in the name
		{"/dev/sda.", "/dev/sda", true}, // '.' matches the end marker
		{"[z-a]", "m", true},            // a range either way round
		{`\.`, "a.b", true},
		{`\.`, "ab", false},
		{"/dev/mapper/.*-(vm|base)--[0-9]+--disk--[0-9]+", "/dev/mapper/vdovg-vm--100--disk--0", true},
		{"/dev/mapper/.*-(vm|base)--[0-9]+--disk--[0-9]+", "/dev/vdovg/vm-100-disk-0", false},
		// A Proxmox VE thin snapshot, snap_<volname>_<snap>
		// (pve-storage LvmThinPlugin.pm): seed 000's reject misses it,
		// keel's matches it and the disk alike.
		{"/dev/mapper/.*-(vm|base)--[0-9]+--disk--[0-9]+", "/dev/mapper/pvethin-snap_vm--100--disk--0_snap1", false},
		{"/dev/mapper/.*-(snap_)?(vm|base)--[0-9]+--disk--[0-9]+", "/dev/mapper/pvethin-snap_vm--100--disk--0_snap1", true},
		{"/dev/mapper/.*-(snap_)?(vm|base)--[0-9]+--disk--[0-9]+", "/dev/mapper/vdovg-vm--100--disk--0", true},
		{"/dev/mapper/.*-(snap_)?(vm|base)--[0-9]+--disk--[0-9]+", "/dev/mapper/vdovg-snap_data", false},
		{"a()", "a", true},
	} {
		re, err := Compile(c.pattern)
		if err != nil {
			t.Fatalf("Compile(%q): %v", c.pattern, err)
		}
		if got := re.MatchString(c.name); got != c.want {
			t.Errorf("%q on %q = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

// TestDecide follows the alias rule with the aliases udev gives an LV.
func TestDecide(t *testing.T) {
	aliases := []string{"/dev/dm-5", "/dev/mapper/vdovg-vm--100--disk--0", "/dev/vdovg/vm-100-disk-0",
		"/dev/disk/by-id/dm-name-vdovg-vm--100--disk--0"}
	seed := []string{"r|/dev/zd.*|", "r|/dev/rbd.*|", "r|/dev/mapper/.*-(vm|base)--[0-9]+--disk--[0-9]+|"}
	for _, c := range []struct {
		name    string
		entries []string
		accept  bool
	}{
		{"seed 000: one alias rejected, none accepted", seed, false},
		{"seed 000 plus a|.*|: /dev/dm-5 accepted", append(append([]string{}, seed...), "a|.*|"), true},
		{"Proxmox stock: nothing matches", []string{"r|/dev/zd.*|", "r|/dev/rbd.*|"}, true},
		{"accept before reject for one alias", []string{"a|/dev/dm-.*|", "r|.*|"}, true},
		// The first entry that matches an alias decides it: an accept
		// further down the list does not undo the reject.
		{"reject before accept for every alias", []string{"r|.*|", "a|.*|"}, false},
		{"reject before accept, one alias", []string{"r|^/dev/mapper/|", "a|^/dev/mapper/|", "r|.*|"}, false},
		{"allow-list without the LV", []string{"a|^/dev/sd.*|", "r|.*|"}, false},
	} {
		f, err := NewFilter(c.entries)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if v := f.Decide(aliases); v.Accepted != c.accept {
			t.Errorf("%s: %+v, want accepted %v", c.name, v, c.accept)
		}
	}
	if _, err := NewFilter([]string{"r|(?:x)|"}); err == nil {
		t.Error("NewFilter accepted a filter LVM refuses")
	}
	if _, err := NewFilter([]string{"x|a|"}); err == nil {
		t.Error("NewFilter accepted an entry that is neither a nor r")
	}
}

func TestParseEntry(t *testing.T) {
	for s, want := range map[string]Entry{"r|/dev/zd.*|": {false, "/dev/zd.*"}, "a(x)": {true, "x"}, "r{a|b}": {false, "a|b"}} {
		if got, err := ParseEntry(s); err != nil || got != want {
			t.Errorf("ParseEntry(%q) = %+v, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "a", "q|x|", "a|x", "a(x("} {
		if _, err := ParseEntry(s); err == nil {
			t.Errorf("ParseEntry(%q) accepted", s)
		}
	}
}

// FuzzCompile: no pattern panics the parser, Check and Compile agree that
// what keel accepts LVM parses, and an accepted pattern matches without
// panicking.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{"/dev/zd.*", "(?:x)", "[a-", `a\`, "a(b|)", "[]a]", "(|a)", "[^]]", `[\]-a]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		lvm := Check(p)
		re, err := Compile(p)
		if err == nil && lvm != nil {
			t.Fatalf("Compile accepts %q, which LVM refuses: %v", p, lvm)
		}
		if re != nil {
			re.MatchString("/dev/mapper/vg-vm--100--disk--0")
		}
	})
}

// TestCompileCorpusVerdicts pins keel's reading of the patterns LVM parses
// with a twist (lvm exit 0 in e2e/lvmfilter's corpus run).
func TestCompileCorpusVerdicts(t *testing.T) {
	for p, want := range map[string]string{
		"|a":     "empty alternative",
		"(a))":   "do not balance",
		"(|a)":   "drops part of it",
		"a||b":   "drops part of it",
		"x{2,1}": "literal characters",
	} {
		if Check(p) != nil {
			t.Errorf("Check(%q): LVM parses it (exit 0 on the guest)", p)
		}
		if _, err := Compile(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Compile(%q) = %v, want %q", p, err, want)
		}
	}
}

// regexFilter is f deciding entry by entry with every regex run on every
// alias, or with the literal prefilter when prefilter is set: the
// reference the automaton is held to.
func regexFilter(f *Filter, prefilter bool) *Filter {
	g := &Filter{entries: f.entries, names: f.names, res: f.res, need: make([]string, len(f.res))} // not rejectOnly: every alias read
	if prefilter {
		g.need = f.need
	}
	g.autoOnce.Do(func() {}) // no automaton: firstRegex decides
	return g
}

// withAutomaton returns f with its automaton built, as after autoAfter
// aliases.
func withAutomaton(t testing.TB, f *Filter) *Filter {
	t.Helper()
	if f.automaton() == nil {
		t.Fatalf("%s: no automaton", f)
	}
	return f
}

// TestDecideAgreesWithEveryRegex holds the filter's automaton, and the
// literal prefilter (Filter.need) of the entry-by-entry path, to the
// verdicts of every regex run on every alias: no verdict, alias or entry
// changes. It also shows both are in use.
func TestDecideAgreesWithEveryRegex(t *testing.T) {
	aliases := []string{"/dev/dm-5", "/dev/block/253:5", "/dev/mapper/vdovg-vm--100--disk--0", "/dev/vdovg/vm-100-disk-0",
		"/dev/disk/by-id/dm-name-vdovg-vm--100--disk--0", "/dev/disk/by-id/dm-uuid-LVM-abc", "/dev/sda", "/dev/zd0",
		"/dev/mapper/pvethin-snap_vm--100--disk--0_nightly", ""}
	entryLists := [][]string{
		{"r|/dev/mapper/.*-(vm|base)--[0-9]+--disk--[0-9]+|"},
		{"r|/dev/zd.*|", "r|/dev/rbd.*|", "r|/dev/mapper/.*-(snap_)?(vm|base)--[0-9]+--disk--[0-9]+|", "a|.*|"},
		{"a|^/dev/sda$|", "r|^/dev/mapper/|", "a|dm-name|", "r|.*|"},
		{"a|/dev/dm-[0-9]+$|", "r|disk|", "a|vdovg|"},
		{"r|(vm|base)--|", "a|^/dev/block/|", "r|uuid-LVM|"},
		{"a|x*|", "r|.*|"},                   // the first entry matches every name
		{"r|^$|", "a|^/dev/sd.?$|", "r|a+|"}, // ^$ only the empty name
		{"r|/dev/sda.|", "a|[^a-z]$|"},       // '.' and [^...] match the end marker
	}
	skipping := false
	for _, entries := range entryLists {
		f, err := NewFilter(entries)
		if err != nil {
			t.Fatalf("%q: %v", entries, err)
		}
		all, pre := regexFilter(f, false), regexFilter(f, true)
		f = withAutomaton(t, f)
		for _, n := range f.need {
			skipping = skipping || n != ""
		}
		for i := range aliases {
			for j := i + 1; j <= len(aliases); j++ {
				want := all.Decide(aliases[i:j])
				if got := f.Decide(aliases[i:j]); got != want {
					t.Errorf("%q on %q: the automaton gives %+v, every regex run %+v", entries, aliases[i:j], got, want)
				}
				if got := pre.Decide(aliases[i:j]); got != want {
					t.Errorf("%q on %q: the prefilter gives %+v, every regex run %+v", entries, aliases[i:j], got, want)
				}
				var buf []byte
				var ends []int
				for _, a := range aliases[i:j] {
					buf = append(buf, a...)
					ends = append(ends, len(buf))
				}
				if got := f.DecideJoined(buf, ends); got != want {
					t.Errorf("%q on %q joined: %+v, every regex run %+v", entries, aliases[i:j], got, want)
				}
			}
		}
	}
	if !skipping {
		t.Error("no entry has a literal to skip by: the test does not reach the prefilter")
	}
}

// A filter builds its automaton once it has decided autoAfter aliases by
// its regexes, and decides the same with it, also when Decide runs on
// many goroutines at once, as the planner runs it over VM disks.
func TestAutomatonAfterManyAliases(t *testing.T) {
	f, err := NewFilter([]string{"r|/dev/zd.*|", "r|/dev/mapper/.*-(snap_)?(vm|base)--[0-9]+--disk--[0-9]+|", "a|.*|"})
	if err != nil {
		t.Fatal(err)
	}
	all := regexFilter(f, false)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range autoAfter {
				a := []string{fmt.Sprintf("/dev/dm-%d", i), fmt.Sprintf("/dev/mapper/pve-vm--%d--disk--%d", 100+i, g)}
				if got, want := f.Decide(a), all.Decide(a); got != want {
					t.Errorf("%q: %+v, the regexes give %+v", a, got, want)
				}
			}
		})
	}
	wg.Wait()
	if f.auto.Load() == nil {
		t.Errorf("no automaton after %d aliases", 4*2*autoAfter)
	}
}

// TestExpect: a filter told of fewer aliases than it decides by regex
// before it builds its automaton builds none; told of as many, it builds
// it before deciding any.
func TestExpect(t *testing.T) {
	f, err := NewFilter([]string{"r|/dev/zd.*|", "a|.*|"})
	if err != nil {
		t.Fatal(err)
	}
	if f.Expect(autoAfter - 1); f.auto.Load() != nil {
		t.Errorf("an automaton for %d aliases", autoAfter-1)
	}
	if f.Expect(autoAfter); f.auto.Load() == nil {
		t.Errorf("no automaton for %d aliases", autoAfter)
	}
}

// FuzzFilterAutomaton: for any two entries keel accepts, the automaton
// and the entries' regexes run one by one pick the same first entry for
// any ASCII name. Beyond ASCII they differ, and the automaton is the one
// that reads as LVM does: LVM's matcher and the automaton read bytes, Go's
// regexp reads UTF-8 runes ("." is one rune of "é", two bytes for LVM).
// Device names and the links udev makes are ASCII (udev escapes the rest
// as \xNN).
func FuzzFilterAutomaton(f *testing.F) {
	f.Add("/dev/mapper/.*-(snap_)?(vm|base)--[0-9]+--disk--[0-9]+", "a|.*", "/dev/mapper/pve-vm--100--disk--0")
	f.Add("^/dev/sd[a-z]$", "x*", "/dev/sda")
	f.Add("(a|b)+c?$", "[^]a]", "ab")
	f.Fuzz(func(t *testing.T, p1, p2, name string) {
		fl, err := NewFilter([]string{"r|" + p1 + "|", "a|" + p2 + "|"})
		if err != nil || strings.ContainsAny(p1+p2, "|") {
			return // not a filter, or a '|' that ends an entry early
		}
		for i := 0; i < len(name); i++ {
			if name[i] >= 0x80 {
				return
			}
		}
		d := fl.automaton()
		if d == nil {
			return // too many states: the regexes decide
		}
		all := regexFilter(fl, false)
		if got, want := firstMatch(d, name), all.firstRegex(name); got != want {
			t.Fatalf("r|%s| a|%s| on %q: automaton entry %d, regexes entry %d", p1, p2, name, got, want)
		}
	})
}

// TestAutomatonBound: a filter whose automaton would outgrow dfaMaxStates
// is decided by its regexes, with the same verdicts.
func TestAutomatonBound(t *testing.T) {
	// (a|b)*a(a|b)(a|b)...: the classic pattern whose automaton doubles
	// with each (a|b) after the a.
	p := "a" + strings.Repeat("[ab]", 13)
	f, err := NewFilter([]string{"r|" + p + "|"})
	if err != nil {
		t.Fatal(err)
	}
	name := "b" + strings.Repeat("ab", 10)
	if f.automaton() != nil {
		t.Errorf("%q: an automaton past %d states", p, dfaMaxStates)
	}
	if v, want := f.Decide([]string{name}), regexFilter(f, false).Decide([]string{name}); v != want {
		t.Errorf("%q on %q: %+v, want %+v from the regex alone", p, name, v, want)
	}
}

// BenchmarkFilterBuild is NewFilter and the automaton of a large filter:
// fifty exact by-id accepts, as hosts that list their PVs write them, then
// the VM-disk reject and a catch-all reject (autoAfter's price).
func BenchmarkFilterBuild(b *testing.B) {
	var entries []string
	for i := range 50 {
		entries = append(entries, fmt.Sprintf("a|^/dev/disk/by-id/wwn-0x5000c500a1b2%04x$|", i))
	}
	entries = append(entries, "r|/dev/mapper/.*-(snap_)?(vm|base)--[0-9]+--disk--[0-9]+|", "r|.*|")
	aliases := []string{"/dev/sda", "/dev/disk/by-id/wwn-0x5000c500a1b20031"}
	b.ReportAllocs()
	for b.Loop() {
		f, err := NewFilter(entries)
		if err != nil {
			b.Fatal(err)
		}
		if !withAutomaton(b, f).Decide(aliases).Accepted {
			b.Fatal("the by-id accept did not decide")
		}
	}
}
