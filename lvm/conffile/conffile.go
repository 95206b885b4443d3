// Package conffile reads LVM's configuration file syntax (lvm.conf(5),
// "SYNTAX"): sections, assignments, strings and arrays, with the byte range
// of every value, so that the editor (reconcile/apply/lvmconf) can replace a
// value keeping every other byte and the planner can tell which file of
// LVM's config cascade sets a setting. It is pure.
package conffile

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseError is a file keel cannot tokenize (an unterminated string,
// unbalanced braces).
type ParseError struct {
	Offset int
	Msg    string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("lvm.conf: offset %d: %s", e.Offset, e.Msg)
}

// TokKind is the kind of a Token.
type TokKind int

// The token kinds: a word (a name or a number), a double-quoted string, and
// the punctuation of the syntax.
const (
	TWord TokKind = iota
	TString
	TLBrace
	TRBrace
	TLBrack
	TRBrack
	TEq
	TComma
)

// Token is one token with its byte range in the source; a string's Text is
// its content between the quotes, escapes not undone.
type Token struct {
	Kind       TokKind
	Start, End int
	Text       string
}

// Tokenize splits src into tokens; comments (# to the end of the line) and
// whitespace separate them.
func Tokenize(src []byte) ([]Token, error) {
	var toks []Token
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '"':
			j := i + 1
			for ; j < len(src) && src[j] != '"'; j++ {
				if src[j] == '\\' {
					j++
				}
			}
			if j >= len(src) {
				return nil, &ParseError{i, "unterminated string"}
			}
			toks = append(toks, Token{TString, i, j + 1, string(src[i+1 : j])})
			i = j + 1
		case strings.IndexByte("{}[]=,", c) >= 0:
			k := map[byte]TokKind{'{': TLBrace, '}': TRBrace, '[': TLBrack, ']': TRBrack, '=': TEq, ',': TComma}[c]
			toks = append(toks, Token{k, i, i + 1, string(c)})
			i++
		default:
			j := i
			for j < len(src) && WordByte(src[j]) {
				j++
			}
			toks = append(toks, Token{TWord, i, j, string(src[i:j])})
			i = j
		}
	}
	return toks, nil
}

// WordByte reports whether c continues a word (a name or a number).
func WordByte(c byte) bool { return strings.IndexByte(" \t\r\n#\"{}[]=,", c) < 0 }

// Assignment is one "key = value" inside a section.
type Assignment struct {
	Path       string // "devices/scan_lvs"
	ValStart   int
	ValEnd     int
	Values     []Token // scalars of the value (one, or a list's items)
	IsList     bool
	WellFormed bool
}

// Section is one top-level "name { … }".
type Section struct {
	Name       string
	CloseStart int // offset of the closing brace
}

// File is a parsed configuration file: its assignments and top-level
// sections in file order.
type File struct {
	Assigns  []Assignment
	Sections []Section
}

// Parse reads src. A section that appears twice is one section (lvm.conf(5):
// "the contents of all instances are concatenated"), so two assignments may
// share a Path; LVM uses the last.
func Parse(src []byte) (*File, error) {
	toks, err := Tokenize(src)
	if err != nil {
		return nil, err
	}
	p := &File{}
	var stack []string
	var open []int // index into p.Sections for top-level sections, -1 for nested
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.Kind == TWord && i+1 < len(toks) && toks[i+1].Kind == TLBrace:
			stack = append(stack, t.Text)
			if len(stack) == 1 {
				p.Sections = append(p.Sections, Section{Name: t.Text})
				open = append(open, len(p.Sections)-1)
			} else {
				open = append(open, -1)
			}
			i++
		case t.Kind == TRBrace:
			if len(stack) == 0 {
				return nil, &ParseError{t.Start, "unbalanced '}'"}
			}
			if idx := open[len(open)-1]; idx >= 0 {
				p.Sections[idx].CloseStart = t.Start
			}
			stack, open = stack[:len(stack)-1], open[:len(open)-1]
		case t.Kind == TWord && i+1 < len(toks) && toks[i+1].Kind == TEq:
			a := Assignment{Path: strings.Join(append(append([]string{}, stack...), t.Text), "/"), WellFormed: true}
			i += 2
			if i >= len(toks) {
				return nil, &ParseError{t.Start, "assignment without a value"}
			}
			v := toks[i]
			a.ValStart = v.Start
			switch v.Kind {
			case TWord, TString:
				a.Values, a.ValEnd = []Token{v}, v.End
			case TLBrack:
				a.IsList = true
				expectItem := true
				for i++; ; i++ {
					if i >= len(toks) {
						return nil, &ParseError{v.Start, "unterminated list"}
					}
					it := toks[i]
					if it.Kind == TRBrack {
						a.ValEnd = it.End
						break
					}
					switch {
					case it.Kind == TComma && !expectItem:
						expectItem = true
					case (it.Kind == TWord || it.Kind == TString) && expectItem:
						a.Values = append(a.Values, it)
						expectItem = false
					default:
						a.WellFormed = false
						if it.Kind == TLBrace || it.Kind == TRBrace || it.Kind == TEq {
							return nil, &ParseError{it.Start, "unexpected " + it.Text + " in a list"}
						}
					}
				}
			default:
				return nil, &ParseError{v.Start, "unexpected " + v.Text + " after '='"}
			}
			p.Assigns = append(p.Assigns, a)
		default:
			return nil, &ParseError{t.Start, fmt.Sprintf("unexpected %q", t.Text)}
		}
	}
	if len(stack) > 0 {
		return nil, &ParseError{len(src), "section " + strings.Join(stack, "/") + " is not closed"}
	}
	return p, nil
}

// Sets reports whether the file assigns path ("devices/scan_lvs") at all.
func (f *File) Sets(path string) bool {
	for _, a := range f.Assigns {
		if a.Path == path {
			return true
		}
	}
	return false
}

// Bool returns the value of the last assignment of path as LVM reads a
// boolean (a number, non-zero is true); ok is false when the file does not
// assign path or assigns something else.
func (f *File) Bool(path string) (value, ok bool) {
	for _, a := range f.Assigns {
		if a.Path != path {
			continue
		}
		ok = false
		if a.IsList || len(a.Values) != 1 || a.Values[0].Kind != TWord {
			continue
		}
		if n, err := strconv.Atoi(a.Values[0].Text); err == nil {
			value, ok = n != 0, true
		}
	}
	return value, ok
}

// Unescape reads an lvm.conf string's content as LVM does: \" and \\
// stand for " and \, any other backslash is kept (libdevmapper's
// dm_unescape_double_quotes).
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
