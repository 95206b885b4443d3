package lvmregex

import (
	"fmt"
	"strings"
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
	res     []*Regexp
	// need[i] is a literal every match of res[i] begins with, when it holds
	// no framing character ("" otherwise): a name without it cannot match,
	// and Decide skips the regex for it (a check runs the filter over every
	// alias of thousands of VM disks, most of which miss every entry).
	need []string
}

// NewFilter parses lvm.conf entries ("r|…|", "a|…|"). It fails when LVM
// would refuse the filter, or when keel cannot model an entry's regex
// (Compile's stricter rules): a Filter answers only for what it models
// exactly.
func NewFilter(entries []string) (*Filter, error) {
	f := &Filter{}
	var regexes []string
	for _, s := range entries {
		e, err := ParseEntry(s)
		if err != nil {
			return nil, err
		}
		f.entries = append(f.entries, e)
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
// accepted when no entry matches any alias.
func (f *Filter) Decide(aliases []string) Verdict {
	var rejected Verdict
	for _, a := range aliases {
		w := ""
		for i, re := range f.res {
			if n := f.need[i]; n != "" && !strings.Contains(a, n) {
				continue // the literal lies inside the name, not the frame
			}
			if w == "" {
				w = wrap(a)
			}
			if !re.re.MatchString(w) {
				continue
			}
			if f.entries[i].Accept {
				return Verdict{Accepted: true, Alias: a, Entry: f.entries[i].String()}
			}
			if rejected.Alias == "" {
				rejected = Verdict{Alias: a, Entry: f.entries[i].String()}
			}
			break
		}
	}
	if rejected.Alias != "" {
		return rejected
	}
	return Verdict{Accepted: true}
}

// String lists the filter's entries as lvm.conf holds them.
func (f *Filter) String() string {
	s := make([]string, len(f.entries))
	for i, e := range f.entries {
		s[i] = fmt.Sprintf("%q", e.String())
	}
	return "[" + strings.Join(s, ",") + "]"
}
