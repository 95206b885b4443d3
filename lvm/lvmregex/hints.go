package lvmregex

import (
	"fmt"
	"regexp"
	"strings"
)

// escapes are the Go/PCRE backslash classes and anchors, with what to write
// in LVM's dialect instead.
var escapes = map[byte]string{
	'd': "[0-9]", 'D': "[^0-9]",
	'w': "[A-Za-z0-9_]", 'W': "[^A-Za-z0-9_]",
	's': "[ \\t]", 'S': "[^ \\t]",
	'A': "^", 'z': "$", 'Z': "$",
	'b': "an explicit set such as [^A-Za-z0-9_] (LVM has no word boundary)",
	'B': "an explicit set (LVM has no word boundary)",
}

// repeatRE is a {n}, {n,} or {n,m} count after something to repeat.
var repeatRE = regexp.MustCompile(`\{[0-9]+(,[0-9]*)?\}`)

// posixRE is a POSIX class inside a set.
var posixRE = regexp.MustCompile(`\[:[a-z]+:\]`)

var posixSets = map[string]string{
	"[:digit:]": "0-9", "[:alpha:]": "A-Za-z", "[:alnum:]": "A-Za-z0-9", "[:lower:]": "a-z",
	"[:upper:]": "A-Z", "[:space:]": ` \t`, "[:xdigit:]": "0-9A-Fa-f",
}

// trap finds what LVM parses but reads differently from Go or PCRE: a
// backslash before a letter or digit other than n, r, t (LVM reads the
// letter itself), a {n,m} repeat count (literal braces), a POSIX class.
func trap(p string) *Error {
	for i := 0; i+1 < len(p); i++ {
		if p[i] != '\\' {
			continue
		}
		c := p[i+1]
		i++
		if c == 'n' || c == 'r' || c == 't' || !isAlnum(c) {
			continue
		}
		h := fmt.Sprintf("write %s", escapes[c])
		if escapes[c] == "" {
			h = fmt.Sprintf("write %c, or the set you meant", c)
		}
		return &Error{Pattern: p, Offset: i - 1, Msg: fmt.Sprintf(`reads \%c as the character %c`, c, c), Hint: h}
	}
	if loc := repeatRE.FindStringIndex(p); loc != nil && loc[0] > 0 {
		return &Error{Pattern: p, Offset: loc[0], Msg: fmt.Sprintf("reads %s as literal characters, not a repeat count", p[loc[0]:loc[1]]),
			Hint: "repeat the item instead, e.g. [a-z][a-z] for [a-z]{2}, and ? for an optional one"}
	}
	if loc := posixRE.FindStringIndex(p); loc != nil {
		cls := p[loc[0]:loc[1]]
		h := "list the characters, e.g. [0-9] for [[:digit:]]"
		if s, ok := posixSets[cls]; ok {
			h = fmt.Sprintf("write [%s] for [%s]", s, cls)
		}
		return &Error{Pattern: p, Offset: loc[0], Msg: fmt.Sprintf("has no POSIX classes: [%s] is one set of the characters [ : %s followed by a literal ']'",
			cls, strings.Join(strings.Split(strings.Trim(cls, "[:]"), ""), " ")), Hint: h}
	}
	return nil
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// hint says how to write a pattern LVM refuses, for the usual traps.
func hint(p string) string {
	switch {
	case strings.Contains(p, "(?"):
		return "LVM has no (?...) groups or flags: write (...) for a group"
	case strings.Contains(p, "|)") || strings.Contains(p, "(|") || strings.Contains(p, "||") ||
		strings.HasPrefix(p, "|") || strings.HasSuffix(p, "|"):
		return "every alternative must be non-empty: write (sdx)? rather than (sdx|)"
	case strings.Contains(p, "()"):
		return "remove the empty group ()"
	case strings.Count(p, "(") > strings.Count(p, ")"):
		return "close every '(' with ')'"
	case strings.Count(p, "[") > strings.Count(p, "]"):
		return "close the set with ']'"
	case strings.HasSuffix(p, `\`):
		return `a trailing backslash escapes LVM's own ')': write \\ for a backslash`
	}
	if len(p) > 0 && strings.ContainsRune("*+?", rune(p[0])) {
		return "a * + or ? needs something before it to repeat: write \\" + p[:1] + " for the character"
	}
	return ""
}
