package converge

import (
	"bytes"

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
func (l *Loop) MaybeBcacheOnly(files []schema.File) bool {
	if l.desired == nil || len(files) != len(l.files) {
		return false
	}
	changed := false
	for i, f := range files {
		if f.Name != l.files[i].Name {
			return false
		}
		if bytes.Equal(f.Data, l.files[i].Data) {
			continue
		}
		prev, ok1 := schema.WithoutField(l.files[i], "bcache")
		next, ok2 := schema.WithoutField(f, "bcache")
		if !ok1 || !ok2 || !bytes.Equal(prev, next) {
			return false
		}
		changed = true
	}
	return changed
}
