package agent

import (
	"bytes"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/parser"
	"github.com/keel-storage/keel/schema"
)

// MaybeBcacheOnly guesses from the syntax alone, before the files are
// evaluated, whether files differ from those of the desired state in
// force, and only inside top-level bcache fields: same file names, and
// every other declaration the same once formatted (comments and layout
// aside). Unchanged files (a SIGHUP) are not a bcache-only change.
// It only decides whether the daemon starts a full probe while it loads
// files (a bcache-only change is served by the fast path first, which
// would make that probe stale); whether the change is bcache-only is
// decided by BcacheOnly on the loaded states.
func (a *Agent) MaybeBcacheOnly(files []schema.File) bool {
	if a.desired == nil || len(files) != len(a.files) {
		return false
	}
	changed := false
	for i, f := range files {
		if f.Name != a.files[i].Name {
			return false
		}
		if bytes.Equal(f.Data, a.files[i].Data) {
			continue
		}
		prev, ok1 := outsideBcache(a.files[i])
		next, ok2 := outsideBcache(f)
		if !ok1 || !ok2 || !bytes.Equal(prev, next) {
			return false
		}
		changed = true
	}
	return changed
}

// outsideBcache formats f without its top-level bcache fields; false when
// it does not parse.
func outsideBcache(f schema.File) ([]byte, bool) {
	af, err := parser.ParseFile(f.Name, f.Data)
	if err != nil {
		return nil, false
	}
	keep := af.Decls[:0]
	for _, d := range af.Decls {
		if fd, ok := d.(*ast.Field); ok {
			if name, _, err := ast.LabelName(fd.Label); err == nil && name == "bcache" {
				continue
			}
		}
		keep = append(keep, d)
	}
	af.Decls = keep
	b, err := format.Node(af)
	return b, err == nil
}
