// Package lvmregex reads the regular expressions of LVM's device filters
// (devices/filter, devices/global_filter) as LVM itself does, and evaluates
// a filter against a device's names.
//
// LVM does not use POSIX, PCRE or Go regular expressions but libdm's own
// small engine (lvm2: libdm/regex/parse_rx.c, libdm/regex/matcher.c). Its
// dialect, as keel models it from that source and from lvm's behaviour on a
// corpus of patterns (e2e/lvmfilter):
//
//   - Operators are only ( ) | * + ?; there are no (?…) groups, no {n,m}
//     repeats, no \d \w \s classes, no POSIX [[:class:]] and no anchors
//     besides ^ and $. A backslash makes the next character literal, except
//     \n, \r and \t; so \d is the letter d and {2} three literal characters.
//   - A character set [...] may hold ranges, written either way round
//     ([z-a] is [a-z]); [^...] is its complement; "[]" is an empty set.
//   - . is any character but newline, carriage return and NUL.
//   - ^ and $ are characters that match the start and the end of a name.
//   - A pattern matches a name when it matches any part of it.
//   - Every alternative must be non-empty: (sdx|) and (|a) are errors, and so
//     is () at the start of a pattern.
//
// LVM builds one matcher from all patterns of a filter by wrapping each as
// "(.*(PATTERN)\0)" and joining them with '|', and then parses the result.
// A pattern therefore fails or succeeds inside that text: a stray ')' can
// close LVM's own group and make it ignore the patterns after it. Check
// gives LVM's verdict on exactly that text; Compile is keel's stricter
// reading, which also refuses patterns that LVM parses into something other
// than what they say.
package lvmregex

import (
	"fmt"
	"regexp"
	"strings"
)

// Special characters LVM's engine uses: the start and end of a name and
// the end of a pattern (libdm/regex/parse_rx.h).
const (
	hatChar    = 0x02
	dollarChar = 0x03
	targetChar = 0x00
)

// Error is a pattern keel refuses: LVM cannot parse it (LVM is true: an
// lvm.conf holding it makes every LVM command fail), or LVM reads it as
// something other than it appears to say.
type Error struct {
	Pattern string
	// Offset is where in Pattern the problem was found (-1: the pattern
	// as a whole).
	Offset int
	// LVM reports that LVM itself refuses the pattern.
	LVM  bool
	Msg  string
	Hint string
}

// Error says what is wrong, who refuses it, and how to write it instead.
func (e *Error) Error() string {
	var b strings.Builder
	if e.LVM {
		b.WriteString("LVM cannot parse this pattern: ")
	} else {
		b.WriteString("LVM parses this pattern but ")
	}
	b.WriteString(e.Msg)
	if e.Offset >= 0 {
		fmt.Fprintf(&b, " (at offset %d)", e.Offset)
	}
	if e.Hint != "" {
		b.WriteString("; " + e.Hint)
	}
	return b.String()
}

// charset is a set of byte values.
type charset [4]uint64

func (c *charset) add(b byte)          { c[b>>6] |= 1 << (b & 63) }
func (c *charset) del(b byte)          { c[b>>6] &^= 1 << (b & 63) }
func (c *charset) has(b byte) bool     { return c[b>>6]&(1<<(b&63)) != 0 }
func (c *charset) empty() bool         { return c[0]|c[1]|c[2]|c[3] == 0 }
func single(b byte) (c charset)        { c.add(b); return c }
func (c *charset) fill(from, to byte)  { c.apply(from, to, true) }
func (c *charset) clear(from, to byte) { c.apply(from, to, false) }

func (c *charset) apply(from, to byte, set bool) {
	for b := int(from); b <= int(to); b++ {
		if set {
			c.add(byte(b))
		} else {
			c.del(byte(b))
		}
	}
}

// anyChar is '.': everything but NUL, newline and carriage return.
func anyChar() charset {
	var c charset
	c.fill(0, 255)
	c.del(0)
	c.del('\n')
	c.del('\r')
	return c
}

// escaped is the character a backslash sequence stands for.
func escaped(b byte) byte {
	switch b {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return b
}

// token kinds.
const (
	tEnd = iota // end of input, or an unterminated character set
	tSet        // one character out of a set
	tOp         // one of ( ) | * + ?
)

type token struct {
	kind int
	op   byte
	set  charset
	pos  int // offset of the token in the text
}

// lexer cuts a regex text into tokens as LVM's engine does.
type lexer struct {
	src string
	pos int
}

func (l *lexer) at(i int) byte {
	if i < len(l.src) {
		return l.src[i]
	}
	return 0 // LVM reads the terminating NUL
}

func (l *lexer) next() token {
	start := l.pos
	if l.pos >= len(l.src) {
		return token{kind: tEnd, pos: start}
	}
	c := l.src[l.pos]
	l.pos++
	switch c {
	case '(', ')', '|', '*', '+', '?':
		return token{kind: tOp, op: c, pos: start}
	case '^':
		return token{kind: tSet, set: single(hatChar), pos: start}
	case '$':
		return token{kind: tSet, set: single(dollarChar), pos: start}
	case '.':
		return token{kind: tSet, set: anyChar(), pos: start}
	case '\\':
		if l.pos >= len(l.src) {
			return token{kind: tEnd, pos: start}
		}
		l.pos++
		return token{kind: tSet, set: single(escaped(l.src[l.pos-1])), pos: start}
	case '[':
		return l.class(start)
	}
	return token{kind: tSet, set: single(c), pos: start}
}

// class reads a character set after its '['. A '-' after a character makes
// a range (either way round); a leading '-' is literal; a backslash
// escapes as outside; the set ends at the first ']'.
func (l *lexer) class(start int) token {
	var set charset
	negate := l.at(l.pos) == '^'
	if negate {
		set.fill(1, 255)
		l.pos++
	}
	put := func(from, to byte) {
		if from > to {
			from, to = to, from
		}
		if negate {
			set.clear(from, to)
		} else {
			set.fill(from, to)
		}
	}
	var last byte // previous character, 0 at the start
	for l.pos < len(l.src) && l.src[l.pos] != ']' {
		c := l.src[l.pos]
		switch {
		case c == '\\':
			l.pos++
			c = escaped(l.at(l.pos))
			put(c, c)
		case c == '-' && last != 0:
			l.pos++
			if l.pos >= len(l.src) {
				return token{kind: tEnd, pos: start}
			}
			c = l.src[l.pos]
			put(last, c)
		default:
			put(c, c)
		}
		l.pos++
		last = c
	}
	if l.pos >= len(l.src) {
		return token{kind: tEnd, pos: start} // no closing ']'
	}
	l.pos++
	return token{kind: tSet, set: set, pos: start}
}

// node kinds of a parsed regex.
const (
	nSet = iota
	nCat
	nAlt
	nStar
	nPlus
	nQuest
)

type node struct {
	kind        int
	set         charset
	left, right *node
	pos         int
}

// parser is LVM's grammar, where a part that parses to nothing is simply
// absent:
//
//	alt     = seq [ '|' alt ]     an empty right-hand side is an error
//	seq     = closure [ seq ]     stops before '|'
//	closure = atom { '*' | '+' | '?' }
//	atom    = set | '(' alt ')'   "(" without its ")" is an error
//
// An error is logged where LVM logs one; the parse goes on as LVM's does,
// so that its result is LVM's (nil: LVM refuses the regex).
type parser struct {
	lex    lexer
	tok    token
	errMsg string
	errPos int
}

func newParser(src string) *parser {
	p := &parser{lex: lexer{src: src}, errPos: -1}
	p.advance()
	return p
}

func (p *parser) advance()          { p.tok = p.lex.next() }
func (p *parser) isOp(op byte) bool { return p.tok.kind == tOp && p.tok.op == op }
func (p *parser) logError(msg string) {
	if p.errMsg == "" {
		p.errMsg, p.errPos = msg, p.tok.pos
	}
}

func (p *parser) alt() *node {
	left := p.seq()
	if left == nil || !p.isOp('|') {
		return left
	}
	pos := p.tok.pos
	p.advance()
	right := p.alt()
	if right == nil {
		p.logError("badly formed 'or' expression: an alternative is empty")
		return nil
	}
	return &node{kind: nAlt, left: left, right: right, pos: pos}
}

func (p *parser) seq() *node {
	left := p.closure()
	if left == nil || p.isOp('|') {
		return left
	}
	right := p.seq()
	if right == nil {
		return left
	}
	return &node{kind: nCat, left: left, right: right, pos: left.pos}
}

func (p *parser) closure() *node {
	n := p.atom()
	if n == nil {
		return nil
	}
	for {
		kind := -1
		switch {
		case p.isOp('*'):
			kind = nStar
		case p.isOp('+'):
			kind = nPlus
		case p.isOp('?'):
			kind = nQuest
		}
		if kind < 0 {
			return n
		}
		n = &node{kind: kind, left: n, pos: p.tok.pos}
		p.advance()
	}
}

func (p *parser) atom() *node {
	switch {
	case p.tok.kind == tSet:
		n := &node{kind: nSet, set: p.tok.set, pos: p.tok.pos}
		p.advance()
		return n
	case p.isOp('('):
		p.advance()
		n := p.alt()
		if !p.isOp(')') {
			p.logError("missing ')'")
			return nil
		}
		p.advance()
		return n
	}
	return nil
}

// wrapped is the text LVM parses for a filter of the given patterns.
func wrapped(patterns []string) (string, []int) {
	var b strings.Builder
	starts := make([]int, len(patterns))
	for i, p := range patterns {
		if i > 0 {
			b.WriteByte('|')
		}
		b.WriteString("(.*(")
		starts[i] = b.Len()
		b.WriteString(p)
		b.WriteString(")")
		b.WriteByte(targetChar)
		b.WriteString(")")
	}
	return b.String(), starts
}

// CheckList gives LVM's verdict on a whole filter's patterns (the regexes
// between the delimiters, in order): nil when LVM builds its matcher, else
// an *Error (LVM true) naming the pattern it fails in.
func CheckList(patterns []string) *Error {
	if len(patterns) == 0 {
		return nil
	}
	text, starts := wrapped(patterns)
	p := newParser(text)
	if p.alt() != nil {
		return nil
	}
	// Attribute the failure to the pattern it happened in.
	i, off := len(patterns)-1, -1
	pos := p.errPos
	if pos < 0 {
		pos = p.tok.pos
	}
	for j := range patterns {
		if pos >= starts[j] {
			i = j
		}
	}
	if o := pos - starts[i]; o >= 0 && o <= len(patterns[i]) {
		off = o
	}
	msg := p.errMsg
	if msg == "" {
		msg = "parse error"
	}
	return &Error{Pattern: patterns[i], Offset: off, LVM: true, Msg: msg, Hint: hint(patterns[i])}
}

// Check gives LVM's verdict on one pattern as the only one of a filter.
func Check(pattern string) *Error { return CheckList([]string{pattern}) }

// Regexp is a pattern keel accepts, ready to match device names as LVM does.
type Regexp struct {
	src  string
	re   *regexp.Regexp
	tree *node // what LVM parsed, for a Filter's automaton
}

// String returns the pattern.
func (r *Regexp) String() string { return r.src }

// MatchString reports whether LVM's engine matches the pattern against
// name: anywhere in it, ^ and $ at its ends.
func (r *Regexp) MatchString(name string) bool {
	return r.re.MatchString(wrap(name))
}

// wrap puts the markers ^ and $ match at name's ends, as MatchString
// does; a caller matching one name against many patterns wraps it once.
func wrap(name string) string {
	return string(rune(hatChar)) + name + string(rune(dollarChar))
}

// Compile returns the pattern as keel accepts it: LVM must parse it alone
// and among others (no parenthesis reaching outside it, no error LVM logs
// and goes on from), and it must not hold what LVM reads differently from
// Go or PCRE (\d, {n}, [[:digit:]], an empty set). Only printable ASCII
// is accepted. Errors are *Error.
func Compile(pattern string) (*Regexp, error) {
	for i := 0; i < len(pattern); i++ {
		if c := pattern[i]; c < ' ' || c > '~' {
			return nil, &Error{Pattern: pattern, Offset: i, Msg: fmt.Sprintf("keel accepts only printable ASCII in a filter, not %q", c)}
		}
	}
	if pattern == "" {
		return nil, &Error{Pattern: pattern, Offset: -1, LVM: true, Msg: "empty pattern"}
	}
	if err := Check(pattern); err != nil {
		return nil, err
	}
	p := newParser(pattern)
	n := p.alt()
	switch {
	case p.errMsg != "":
		return nil, &Error{Pattern: pattern, Offset: p.errPos, Msg: "logs \"" + p.errMsg + "\" and drops part of it", Hint: hint(pattern)}
	case n == nil:
		return nil, &Error{Pattern: pattern, Offset: p.tok.pos, Msg: "it starts with an empty alternative, which LVM drops",
			Hint: "every alternative must be non-empty: write (sdx)? rather than (sdx|)"}
	case p.tok.kind != tEnd:
		return nil, &Error{Pattern: pattern, Offset: p.tok.pos,
			Msg: "its parentheses do not balance: an unmatched ')' closes LVM's own group and hides the filter entries after it"}
	}
	if e := trap(pattern); e != nil {
		return nil, e
	}
	if pos, ok := emptySet(n); ok {
		return nil, &Error{Pattern: pattern, Offset: pos, Msg: "[] is an empty set there and the pattern can never match",
			Hint: `to put ']' in a set, escape it: [\]...]`}
	}
	var b strings.Builder
	goSyntax(&b, n)
	re, err := regexp.Compile(b.String())
	if err != nil { // a defect: goSyntax writes only what RE2 reads
		return nil, fmt.Errorf("lvmregex: pattern %q as Go %q: %w", pattern, b.String(), err)
	}
	return &Regexp{src: pattern, re: re, tree: n}, nil
}

// emptySet finds a set that matches nothing (from "[]").
func emptySet(n *node) (int, bool) {
	if n == nil {
		return 0, false
	}
	if n.kind == nSet && n.set.empty() {
		return n.pos, true
	}
	if pos, ok := emptySet(n.left); ok {
		return pos, true
	}
	return emptySet(n.right)
}

// goSyntax writes n as an RE2 regex over the name framed by hatChar and
// dollarChar, one explicit class per set.
func goSyntax(b *strings.Builder, n *node) {
	switch n.kind {
	case nSet:
		b.WriteByte('[')
		for c := 0; c < 256; c++ {
			if !n.set.has(byte(c)) {
				continue
			}
			end := c
			for end+1 < 256 && n.set.has(byte(end+1)) {
				end++
			}
			fmt.Fprintf(b, `\x{%x}`, c)
			if end > c {
				fmt.Fprintf(b, `-\x{%x}`, end)
			}
			c = end
		}
		b.WriteByte(']')
	case nCat:
		b.WriteString("(?:")
		goSyntax(b, n.left)
		goSyntax(b, n.right)
		b.WriteString(")")
	case nAlt:
		b.WriteString("(?:")
		goSyntax(b, n.left)
		b.WriteString("|")
		goSyntax(b, n.right)
		b.WriteString(")")
	default:
		b.WriteString("(?:")
		goSyntax(b, n.left)
		b.WriteString(")")
		b.WriteString(map[int]string{nStar: "*", nPlus: "+", nQuest: "?"}[n.kind])
	}
}
