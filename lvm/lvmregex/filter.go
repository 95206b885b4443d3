package lvmregex

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
)

// Entry is one filter entry: "a|regex|" accepts, "r|regex|" rejects.
type Entry struct {
	Accept bool
	Regex  string
}

// String writes the entry as lvm.conf holds it, with '|' as delimiter.
func (e Entry) String() string {
	if e.Accept {
		return "a|" + e.Regex + "|"
	}
	return "r|" + e.Regex + "|"
}

// ParseEntry reads an lvm.conf filter entry as LVM does
// (lib/filters/filter-regex.c): 'a' or 'r', a delimiter character ('(',
// '[' and '{' close with ')', ']' and '}'), the regex, and the closing
// delimiter as the entry's last character.
func ParseEntry(s string) (Entry, error) {
	if len(s) < 2 || (s[0] != 'a' && s[0] != 'r') {
		return Entry{}, fmt.Errorf("filter entry %q: pattern must begin with 'a' or 'r'", s)
	}
	closer := s[1]
	switch closer {
	case '(':
		closer = ')'
	case '[':
		closer = ']'
	case '{':
		closer = '}'
	}
	if len(s) < 3 || s[len(s)-1] != closer {
		return Entry{}, fmt.Errorf("filter entry %q: invalid separator at end of regex (want %q)", s, closer)
	}
	return Entry{Accept: s[0] == 'a', Regex: s[2 : len(s)-1]}, nil
}

// Filter is a global_filter (or filter) as LVM applies it.
type Filter struct {
	entries []Entry
	names   []string // the entries as lvm.conf writes them, for verdicts
	res     []*Regexp
	// need[i] is a literal every match of res[i] begins with, when it holds
	// no framing character ("" otherwise): a name without it cannot match,
	// and Decide skips the regex for it (a check runs the filter over every
	// alias of thousands of VM disks, most of which miss every entry).
	need []string
	// rejectOnly: no entry accepts, so the first alias a reject matches
	// decides the device (no later alias can be accepted).
	rejectOnly bool
	// auto is every entry as one automaton, built once the filter has
	// decided autoAfter aliases entry by entry (regexRuns counts them);
	// nil before, and when the filter needs too many states.
	auto      atomic.Pointer[dfa]
	autoOnce  sync.Once
	regexRuns atomic.Int64
}

// autoAfter is how many aliases a filter decides entry by entry before it
// builds its automaton. Building costs about what a few hundred regex runs
// do (BenchmarkFilterBuild: tens of long entries, milliseconds); a filter
// judged over a handful of PVs never pays it, one judged over thousands of
// VM disks' aliases does, once.
const autoAfter = 256

// NewFilter parses lvm.conf entries ("r|…|", "a|…|"). It fails when LVM
// would refuse the filter, or when keel cannot model an entry's regex
// (Compile's stricter rules): a Filter answers only for what it models
// exactly.
func NewFilter(entries []string) (*Filter, error) {
	f := &Filter{rejectOnly: true}
	var regexes []string
	for _, s := range entries {
		e, err := ParseEntry(s)
		if err != nil {
			return nil, err
		}
		f.entries = append(f.entries, e)
		f.names = append(f.names, e.String())
		f.rejectOnly = f.rejectOnly && !e.Accept
		regexes = append(regexes, e.Regex)
	}
	if err := CheckList(regexes); err != nil {
		return nil, fmt.Errorf("filter entry %q: %w", err.Pattern, err)
	}
	for _, e := range f.entries {
		re, err := Compile(e.Regex)
		if err != nil {
			return nil, fmt.Errorf("filter entry %q: %w", e.String(), err)
		}
		f.res = append(f.res, re)
		need, _ := re.re.LiteralPrefix()
		if strings.ContainsAny(need, string([]byte{hatChar, dollarChar})) {
			need = ""
		}
		f.need = append(f.need, need)
	}
	return f, nil
}

// Verdict is what a filter decides for a device, and why.
type Verdict struct {
	Accepted bool
	// Alias is the device name that decided: the first one an accept
	// matched, or the first one a reject matched when the device is
	// rejected; empty when no entry matched any name.
	Alias string
	// Entry is the entry that decided for Alias.
	Entry string
}

// Decide applies the filter to a device known by aliases, as LVM does
// (lib/filters/filter-regex.c _accept_p): each alias is decided by the first
// entry that matches it; the device is accepted as soon as one alias is
// accepted, rejected when some alias was rejected and none accepted, and
// accepted when no entry matches any alias. All entries run as one
// automaton, one pass over each alias.
func (f *Filter) Decide(aliases []string) Verdict {
	return decide(f, len(aliases), func(k int) string { return aliases[k] })
}

// DecideJoined is Decide for aliases laid end to end in buf, alias k
// ending at ends[k]: a caller judging thousands of devices writes their
// names into one reused buffer, and only the alias a verdict names
// becomes a string.
func (f *Filter) DecideJoined(buf []byte, ends []int) Verdict {
	return decide(f, len(ends), func(k int) []byte {
		start := 0
		if k > 0 {
			start = ends[k-1]
		}
		return buf[start:ends[k]]
	})
}

// decide is Decide over n aliases given by alias.
func decide[T string | []byte](f *Filter, n int, alias func(k int) T) Verdict {
	rejAlias, rejEntry := -1, -1
	for k := range n {
		a := alias(k)
		var i int
		if d := f.matcher(); d != nil {
			i = firstMatch(d, a)
		} else {
			i = f.firstRegex(string(a))
		}
		switch {
		case i < 0:
			continue
		case f.entries[i].Accept:
			return Verdict{Accepted: true, Alias: string(a), Entry: f.names[i]}
		case rejAlias < 0:
			rejAlias, rejEntry = k, i
			if f.rejectOnly {
				return Verdict{Alias: string(a), Entry: f.names[i]}
			}
		}
	}
	if rejAlias >= 0 {
		return Verdict{Alias: string(alias(rejAlias)), Entry: f.names[rejEntry]}
	}
	return Verdict{Accepted: true}
}

// Expect tells f that about n aliases are to be decided now. When they
// are as many as f would decide entry by entry before it builds its
// automaton (autoAfter), it builds the automaton at once: a caller judging
// the aliases of thousands of devices knows the count beforehand.
func (f *Filter) Expect(n int) {
	if n >= autoAfter {
		f.automaton()
	}
}

// matcher returns the automaton, building it when this call is the
// autoAfter-th alias decided entry by entry; nil until then. Decide runs
// concurrently: one caller builds, the others go on with the regexes.
func (f *Filter) matcher() *dfa {
	if d := f.auto.Load(); d != nil {
		return d
	}
	if f.regexRuns.Add(1) == autoAfter {
		return f.automaton()
	}
	return nil
}

// automaton builds f's automaton from the entries' parse trees (once) and
// returns it, nil when it would need too many states.
func (f *Filter) automaton() *dfa {
	f.autoOnce.Do(func() {
		trees := make([]*node, len(f.res))
		for i, re := range f.res {
			if re.tree == nil {
				return
			}
			trees[i] = re.tree
		}
		if d := newDFA(trees); d != nil {
			f.auto.Store(d)
		}
	})
	return f.auto.Load()
}

// firstRegex returns the first entry whose regex matches alias, or -1.
func (f *Filter) firstRegex(alias string) int {
	w := ""
	for i, re := range f.res {
		if n := f.need[i]; n != "" && !strings.Contains(alias, n) {
			continue // the literal lies inside the name, not the frame
		}
		if w == "" {
			w = wrap(alias)
		}
		if re.re.MatchString(w) {
			return i
		}
	}
	return -1
}

// String lists the filter's entries as lvm.conf holds them.
func (f *Filter) String() string {
	s := make([]string, len(f.entries))
	for i, e := range f.entries {
		s[i] = fmt.Sprintf("%q", e.String())
	}
	return "[" + strings.Join(s, ",") + "]"
}
