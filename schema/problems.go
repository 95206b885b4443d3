package schema

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	cueerrors "cuelang.org/go/cue/errors"
)

// schemaMessagePrefix starts the strings keel.cue unifies into a field to
// reject it with a readable reason (a limit that needs arithmetic on a size).
const schemaMessagePrefix = "must be "

// cueProblem is one CUE error before presentation.
type cueProblem struct {
	path   []string
	format string
	args   []any
	pos    []Position // positions in the user's files, first is primary
}

func (c cueProblem) msg() string { return fmt.Sprintf(c.format, c.args...) }

func (c cueProblem) isConflict() bool {
	return strings.HasPrefix(c.format, "conflicting values ") && len(c.args) >= 2
}

// fromCUE turns a CUE error into problems: one per offending field, with
// the position in the user's files first. CUE reports a failed disjunction
// (a field with a default, an enum) as one error per alternative; those are
// merged into one readable message.
func fromCUE(err error, v cue.Value, userFiles []string) []Problem {
	var raw []cueProblem
	for _, ce := range cueerrors.Errors(err) {
		f, a := ce.Msg()
		if strings.HasSuffix(f, "errors in empty disjunction:") {
			continue
		}
		path := ce.Path()
		if len(path) > 0 && path[0] == "#Config" {
			path = path[1:]
		}
		cp := cueProblem{path: path, format: f, args: a}
		for _, tp := range cueerrors.Positions(ce) {
			p := positionOf(tp)
			if slices.Contains(userFiles, p.File) && !slices.Contains(cp.pos, p) {
				cp.pos = append(cp.pos, p)
			}
		}
		raw = append(raw, cp)
	}
	// Drop an error whose field has a more precise error below it (a
	// threads struct that failed "auto" | {...} because of one count).
	var kept []cueProblem
	for i, r := range raw {
		deeper := false
		for j, o := range raw {
			if i != j && len(o.path) > len(r.path) && slices.Equal(o.path[:len(r.path)], r.path) {
				deeper = true
				break
			}
		}
		if !deeper {
			kept = append(kept, r)
		}
	}
	// Group by path, in order of first appearance.
	var order []string
	groups := map[string][]cueProblem{}
	for _, k := range kept {
		key := strings.Join(k.path, ".")
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], k)
	}
	var out []Problem
	for _, key := range order {
		out = append(out, present(groups[key], v, userFiles))
	}
	return out
}

// present makes one problem of the errors CUE gave for one field.
func present(g []cueProblem, v cue.Value, userFiles []string) Problem {
	path := g[0].path
	var msg string
	var conflicts, others []cueProblem
	var structFields []string // from "cannot combine regular field %s with %v"
	var structGiven string
	for _, e := range g {
		switch {
		case e.isConflict():
			conflicts = append(conflicts, e)
		case strings.HasPrefix(e.format, "cannot combine regular field ") && len(e.args) == 2:
			structFields = append(structFields, fmt.Sprint(e.args[0]))
			structGiven = fmt.Sprint(e.args[1])
		default:
			others = append(others, e)
		}
	}
	switch {
	case sizeAsNumber(g) != "":
		msg = fmt.Sprintf("invalid value %s: sizes are strings such as \"40G\"", sizeAsNumber(g))
	case reasonOf(conflicts) != "":
		msg = reasonOf(conflicts)
	case len(structFields) > 0 && len(others) == 0:
		// A scalar where a struct is one alternative ("auto" | {...}).
		want := []string{}
		for _, c := range conflicts {
			for _, a := range c.args[:2] {
				if s := fmt.Sprint(a); s != structGiven && !slices.Contains(want, s) {
					want = append(want, s)
				}
			}
		}
		slices.Sort(structFields)
		want = append(want, "{"+strings.Join(structFields, ", ")+"}")
		msg = fmt.Sprintf("invalid value %s: want %s", structGiven, strings.Join(want, " or "))
	case len(others) > 0:
		msg = others[0].msg()
	case len(conflicts) > 1:
		msg = enumMessage(conflicts)
	default:
		msg = g[0].msg()
	}
	msg = explainBound(msg)
	if strings.HasPrefix(msg, "field not allowed") && v.Exists() && len(path) > 0 {
		if near := nearestField(v, path); near != "" {
			msg += fmt.Sprintf("; did you mean %s?", near)
		}
	}
	// Hidden _name fields carry the name rules for map keys: report them
	// at the key.
	if n := len(path); n > 0 && path[n-1] == "_name" {
		path = path[:n-1]
		msg = "invalid name " + strings.TrimPrefix(msg, "invalid value ")
	}
	var pos []Position
	for _, e := range g {
		for _, p := range e.pos {
			if !slices.Contains(pos, p) {
				pos = append(pos, p)
			}
		}
	}
	p := Problem{Path: strings.Join(path, "."), Msg: msg}
	if len(pos) > 0 {
		p.Pos, p.Also = pos[0], pos[1:]
	} else if v.Exists() {
		p.Pos = userPos(v, cuePath(path), userFiles)
	}
	return p
}

// reasonOf returns "invalid value X: must be …" when one alternative of a
// failed disjunction is one of keel.cue's reason strings.
func reasonOf(conflicts []cueProblem) string {
	for _, c := range conflicts {
		a, b := fmt.Sprint(c.args[0]), fmt.Sprint(c.args[1])
		if strings.HasPrefix(a, `"`+schemaMessagePrefix) {
			return fmt.Sprintf("invalid value %s: %s", b, strings.Trim(a, `"`))
		}
		if strings.HasPrefix(b, `"`+schemaMessagePrefix) {
			return fmt.Sprintf("invalid value %s: %s", a, strings.Trim(b, `"`))
		}
	}
	return ""
}

// enumMessage merges "conflicting values A and X" for each alternative A
// into "invalid value X: want one of A, B, C".
func enumMessage(conflicts []cueProblem) string {
	count := map[string]int{}
	for _, c := range conflicts {
		for _, a := range c.args[:2] {
			count[fmt.Sprint(a)]++
		}
	}
	var given string
	for s, n := range count {
		if n == len(conflicts) {
			given = s
		}
	}
	if given == "" {
		return conflicts[len(conflicts)-1].msg()
	}
	var want []string
	for _, c := range conflicts {
		for _, a := range c.args[:2] {
			if s := fmt.Sprint(a); s != given && !slices.Contains(want, s) {
				want = append(want, s)
			}
		}
	}
	return fmt.Sprintf("invalid value %s: want one of %s", given, strings.Join(want, ", "))
}

// cuePath joins CUE error path elements (already in CUE label syntax) into
// a path cue.ParsePath reads; list indexes become [n].
func cuePath(elems []string) string {
	var b strings.Builder
	for i, e := range elems {
		if e != "" && strings.Trim(e, "0123456789") == "" {
			b.WriteString("[" + e + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e)
	}
	return b.String()
}

// userPos finds the position of the field at path in the user's files, or
// that of its closest ancestor that has one.
func userPos(v cue.Value, path string, userFiles []string) Position {
	p := cue.ParsePath(path)
	sels := p.Selectors()
	for n := len(sels); n >= 0; n-- {
		fv := v.LookupPath(cue.MakePath(sels[:n]...))
		if !fv.Exists() {
			continue
		}
		if pos := positionOf(fv.Pos()); slices.Contains(userFiles, pos.File) {
			return pos
		}
		// A value unified from several files reports one of them; look
		// at its conjuncts for one in the user's files.
		if _, vs := fv.Expr(); len(vs) > 0 {
			for _, c := range vs {
				if pos := positionOf(c.Pos()); slices.Contains(userFiles, pos.File) {
					return pos
				}
			}
		}
	}
	return Position{}
}

// boundTexts explain keel.cue's regular expressions in words; each entry is
// a distinctive piece of the bound as CUE prints it.
var boundTexts = []struct{ bound, text string }{
	{`[bBsSkKmMgGtTpPeE]|[KMGTPE]iB`, `not a size: a number with an optional unit b, s, k, m, g, t, p or e (either case) or KiB..EiB, such as "40G"`},
	{`=~"^/dev/`, `not a device path: an absolute path under /dev made of letters, digits and . _ + : @ = , / -`},
	{`(^|/)\\.\\.?(/|$)`, `a path must not contain "." or ".." components`},
	{`!~"//"`, `a path must not contain "//"`},
	{`=~"^/[A-Za-z0-9`, `not an absolute path made of letters, digits and . _ + : @ = , / -`},
	{`{0,126}$"`, `LVM names are 1 to 127 letters, digits and + _ . -, not starting with -`},
	{`!="."`, `"." is not a valid LVM name`},
	{`!=".."`, `".." is not a valid LVM name`},
	{`^(snapshot|pvmove)`, `LVM reserves names starting with snapshot or pvmove`},
	{`_(cdata|cmeta`, `LVM reserves names containing a sub-LV suffix (_tdata, _tmeta, _vdata, _cdata, _rimage, ...)`},
	{`[0-9a-f]{8}-`, `not a UUID (lower-case hex, 8-4-4-4-12)`},
	{`[^\"\\n]`, `an LVM filter regex may not contain a double quote or a newline`},
	{`\\.prom$`, `node_exporter's textfile collector reads only files ending in .prom`},
}

// explainBound rewrites "invalid value X (out of bound B)" for one of
// keel.cue's regular expressions into "invalid value X: <why>".
func explainBound(msg string) string {
	val, bound, ok := strings.Cut(strings.TrimPrefix(msg, "invalid value "), " (out of bound ")
	if !ok || !strings.HasPrefix(msg, "invalid value ") {
		return msg
	}
	for _, b := range boundTexts {
		if strings.Contains(bound, b.bound) {
			return "invalid value " + val + ": " + b.text
		}
	}
	return msg
}

// sizeMarker is a piece of the size regex as CUE prints it in an error.
const sizeMarker = `[bBsSkKmMgGtTpPeE]|[KMGTPE]iB`

// numberRE matches a number as CUE prints it.
var numberRE = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// sizeAsNumber returns the number given where the schema wants a size
// string (size: 40 instead of size: "40G"), or "".
func sizeAsNumber(g []cueProblem) string {
	for _, e := range g {
		if strings.Contains(e.msg(), "out of bound") {
			return "" // a number is one alternative (bcache's sequentialCutoff)
		}
	}
	for _, e := range g {
		if !strings.Contains(e.msg(), sizeMarker) {
			continue
		}
		for _, a := range e.args {
			if s := fmt.Sprint(a); numberRE.MatchString(s) {
				return s
			}
		}
	}
	return ""
}

// nearestField returns the field of the struct holding the field at path
// whose name is closest to the one given (a typo: maxDiscrad for
// maxDiscard), or "" when none is close. The fields are the schema's: the
// value v has the schema unified in, with its optional fields.
func nearestField(v cue.Value, path []string) string {
	given := path[len(path)-1]
	parent := v.LookupPath(cue.ParsePath(cuePath(path[:len(path)-1])))
	if !parent.Exists() {
		return ""
	}
	it, err := parent.Fields(cue.Optional(true))
	if err != nil {
		return ""
	}
	best, bestD := "", len(given)/3+2 // at most a third of the name wrong, and at least 2 edits allowed
	for it.Next() {
		name := it.Selector().Unquoted()
		if name == given || strings.HasPrefix(name, "_") {
			continue
		}
		if d := editDistance(strings.ToLower(given), strings.ToLower(name)); d < bestD {
			best, bestD = name, d
		}
	}
	return best
}

// editDistance is the Damerau-Levenshtein distance (optimal string
// alignment) between a and b: insertions, deletions, substitutions and
// swaps of two adjacent letters each cost 1.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
