package schema

import (
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/parser"
)

// WithoutField returns f parsed and formatted without its top-level
// declarations of field, so that two versions of a file can be compared
// outside that field with comments and layout aside; false when f does not
// parse. It reads the syntax only: nothing is evaluated.
func WithoutField(f File, field string) ([]byte, bool) {
	af, err := parser.ParseFile(f.Name, f.Data)
	if err != nil {
		return nil, false
	}
	keep := af.Decls[:0]
	for _, d := range af.Decls {
		if fd, ok := d.(*ast.Field); ok {
			if name, _, err := ast.LabelName(fd.Label); err == nil && name == field {
				continue
			}
		}
		keep = append(keep, d)
	}
	af.Decls = keep
	b, err := format.Node(af)
	return b, err == nil
}
