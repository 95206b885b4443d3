package probes

import "github.com/keel-storage/keel/probes/model"

// fieldSet reads a fixed list of fields from rows, finding where each is
// once per row shape (the rows of a subreport share one) instead of one
// map lookup per field and row: building the objects from the decoded
// report is most of what keel check does after lvm fullreport exits, and
// this takes a third less time (BenchmarkBuildObjectsScale;
// docs/benchmark-history.md).
type fieldSet struct {
	names []string
	keys  *model.FieldKeys
	pos   []int // where each name is in keys.names; -1 when the shape lacks it
}

func newFieldSet(names []string) *fieldSet {
	return &fieldSet{names: names, pos: make([]int, len(names))}
}

// of returns r to be read by the index of a name in the set.
func (s *fieldSet) of(r model.Fields) setRow {
	if r.Keys() != s.keys {
		s.keys = r.Keys()
		for i, n := range s.names {
			s.pos[i] = -1
			if r.Keys() != nil {
				if j, ok := r.Keys().Index(n); ok {
					s.pos[i] = j
				}
			}
		}
	}
	return setRow{r: r, pos: s.pos}
}

// setRow is a row read through a fieldSet.
type setRow struct {
	r   model.Fields
	pos []int
}

// get returns the value of the set's field i, "" when the row lacks it.
func (v setRow) get(i int) string {
	j := v.pos[i]
	if j < 0 {
		return ""
	}
	return v.r.Value(j)
}
