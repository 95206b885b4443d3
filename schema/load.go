package schema

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
	"github.com/keel-storage/keel/schema/desiredfiles"
	"github.com/keel-storage/keel/schema/spec"
)

// DefaultPath is where keel reads its desired state when no path is given
// (desiredfiles.DefaultPath).
const DefaultPath = desiredfiles.DefaultPath

// Paths returns the desired-state paths to read (desiredfiles.Paths).
func Paths(paths []string) []string { return desiredfiles.Paths(paths) }

// schemaDir prefixes the embedded schema's file names in positions, so that
// they never collide with a desired-state file's name.
const schemaDir = "keel.schema"

// Position is a place in a desired-state file.
type Position struct {
	File string
	Line int
	Col  int
}

// IsValid reports whether the position names a file.
func (p Position) IsValid() bool { return p.File != "" }

// String formats the position as file:line:col.
func (p Position) String() string {
	if !p.IsValid() {
		return "-"
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

func positionOf(tp token.Pos) Position {
	if !tp.IsValid() {
		return Position{}
	}
	p := tp.Position()
	return Position{File: p.Filename, Line: p.Line, Col: p.Column}
}

// Problem is one reason why a desired state is invalid.
type Problem struct {
	// Pos is the offending place in a desired-state file. It is zero only
	// when no position in the user's files is known (never for the checks
	// keel runs after CUE).
	Pos Position
	// Also lists further places involved, such as the other side of a
	// conflict between two drop-in files.
	Also []Position
	// Path is the field's path in the desired state, e.g.
	// volumeGroups.vdovg.vdoPools.vdopool.virtualSize.
	Path string
	// Msg says what is wrong.
	Msg string
	// Check names the keel check that found the problem; it is empty for
	// problems the CUE schema finds (which `cue vet -c` finds as well).
	Check string
}

// String formats the problem as "file:line:col: path: message".
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.Pos.String())
	b.WriteString(": ")
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	if len(p.Also) > 0 {
		s := make([]string, len(p.Also))
		for i, a := range p.Also {
			s[i] = a.String()
		}
		b.WriteString(" (also " + strings.Join(s, ", ") + ")")
	}
	return b.String()
}

// Error is the error Load returns for an invalid desired state. Any other
// error from Load means the files could not be read.
type Error struct {
	Problems []Problem
}

// Error prints one problem per line.
func (e *Error) Error() string {
	s := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		s[i] = p.String()
	}
	return strings.Join(s, "\n")
}

// File is one desired-state file's name and content (desiredfiles.File).
type File = desiredfiles.File

// Desired is a validated desired state: its Go form with every default
// filled in, the CUE value it was decoded from (for positions), and the
// files it came from.
type Desired struct {
	Config *spec.Config
	Value  cue.Value
	Files  []string
}

// Pos returns the position in the user's files of the field at path (CUE
// syntax, e.g. `volumeGroups.vdovg.pvs[0]`), or of its closest ancestor that
// has one there.
func (d *Desired) Pos(path string) Position {
	return userPos(d.Value, path, d.Files)
}

// Effective returns the desired state with every default filled in, as CUE.
func (d *Desired) Effective() ([]byte, error) {
	n := d.Value.Syntax(cue.Final(), cue.Concrete(true), cue.Definitions(false), cue.Hidden(false), cue.Docs(false))
	if s, ok := n.(*ast.StructLit); ok {
		n = &ast.File{Decls: s.Elts} // top level without the outer braces
	}
	b, err := format.Node(n)
	if err != nil {
		return nil, fmt.Errorf("print effective desired state: %w", err)
	}
	return b, nil
}

// Loader validates desired states against the embedded schema. It is safe
// for concurrent use; loads are serialised.
type Loader struct {
	mu     sync.Mutex
	ctx    *cue.Context
	loads  int // loads on ctx
	schema []File
}

// contextLoads is how many loads share one CUE context. A context keeps
// what every build on it allocated (about 0.7 MB per load of an example),
// so a long-lived Loader, as the agent's, starts a new one now and then.
const contextLoads = 16

// NewLoader returns a Loader for the embedded schema.
func NewLoader() *Loader {
	l := &Loader{ctx: cuecontext.New()}
	for _, name := range schemaFiles {
		b, err := FS.ReadFile(name)
		if err != nil {
			panic("schema: embedded file missing: " + name) // a build defect, not input
		}
		l.schema = append(l.schema, File{Name: schemaDir + "/" + name, Data: b})
	}
	return l
}

// Load reads, validates and decodes the desired state in paths (files, or
// directories whose *.cue files are unified as drop-ins); no path means
// DefaultPath. An invalid desired state gives an *Error listing every
// problem with its file:line:col; any other error means the input could not
// be read. Each call builds its own Loader; a caller that loads more than
// once keeps one (NewLoader).
func Load(paths ...string) (*spec.Config, error) {
	d, err := NewLoader().Load(paths...)
	if err != nil {
		return nil, err
	}
	return d.Config, nil
}

// Vet validates the desired state in paths and returns its problems, sorted
// by position; none means valid. The error is set only when the input could
// not be read.
func Vet(paths ...string) ([]Problem, error) {
	_, err := NewLoader().Load(paths...)
	var e *Error
	if errors.As(err, &e) {
		return e.Problems, nil
	}
	return nil, err
}

// Load is the package-level Load with this loader, returning the whole
// Desired.
func (l *Loader) Load(paths ...string) (*Desired, error) {
	files, err := ReadFiles(paths...)
	if err != nil {
		return nil, err
	}
	return l.LoadFiles(files)
}

// ReadFiles reads the desired-state files in paths (desiredfiles.Read).
func ReadFiles(paths ...string) ([]File, error) { return desiredfiles.Read(paths...) }

// LoadConfig is LoadFiles returning only the decoded desired state.
func (l *Loader) LoadConfig(files []File) (*spec.Config, error) {
	d, err := l.LoadFiles(files)
	if err != nil {
		return nil, err
	}
	return d.Config, nil
}

// LoadFiles validates and decodes the given desired-state files as one
// desired state (drop-ins unified). Errors are *Error.
func (l *Loader) LoadFiles(files []File) (*Desired, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.loads++; l.loads > contextLoads {
		l.ctx, l.loads = cuecontext.New(), 1
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.Name
	}
	inst := build.NewContext().NewInstance(schemaDir, nil)
	var problems []Problem
	for _, f := range l.schema {
		af, err := parser.ParseFile(f.Name, f.Data)
		if err != nil {
			panic("schema: embedded schema does not parse: " + err.Error())
		}
		if err := inst.AddSyntax(af); err != nil {
			panic("schema: embedded schema: " + err.Error())
		}
	}
	for _, f := range files {
		af, err := parser.ParseFile(f.Name, f.Data)
		if err != nil {
			problems = append(problems, fromCUE(err, cue.Value{}, names)...)
			continue
		}
		if af.PackageName() != "" && af.PackageName() != "keel" {
			problems = append(problems, Problem{Pos: positionOf(af.Pos()),
				Msg: fmt.Sprintf("package %q: a desired-state file has no package clause or `package keel`", af.PackageName())})
			continue
		}
		if err := inst.AddSyntax(af); err != nil {
			problems = append(problems, fromCUE(err, cue.Value{}, names)...)
		}
	}
	if len(problems) > 0 {
		return nil, newError(problems)
	}
	v := l.ctx.BuildInstance(inst)
	// Validate reports every error; v.Err only the first.
	if err := v.Validate(cue.Concrete(true)); err != nil {
		return nil, newError(fromCUE(err, v, names))
	}
	if err := v.Err(); err != nil {
		return nil, newError(fromCUE(err, v, names))
	}
	var c spec.Config
	if err := v.Decode(&c); err != nil {
		return nil, newError(fromCUE(err, v, names))
	}
	d := &Desired{Config: &c, Value: v, Files: names}
	if ps := check(d); len(ps) > 0 {
		return nil, newError(ps)
	}
	return d, nil
}

func newError(ps []Problem) *Error {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i].Pos, ps[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return &Error{Problems: ps}
}
