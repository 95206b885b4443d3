package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"
	"strings"
)

// Fields is one row of an LVM report as LVM printed it: field name to
// value, every value a string. It reads like a map[string]string (a
// missing field is ""), and encodes to and decodes from the same JSON
// object, keys sorted, but costs far less for the thousands of LV and
// segment rows of a large host: the rows of one sub-report share one list
// of their field names (a shape, with its index built once), and a row
// keeps only its values, back to back in a string that neighbouring rows
// share, and where each starts, in a slice without pointers for the
// garbage collector to scan.
//
// The zero Fields has no field and encodes as null, as a nil map does.
// Copies of a Fields share its contents; Set changes the one it is called
// on and leaves copies as they were.
type Fields struct {
	keys *FieldKeys
	text string   // the values in keys.names order, back to back
	offs []uint32 // value i is text[offs[i]:offs[i+1]]: len(keys.names)+1 offsets
}

// FieldKeys is the shape of Fields rows: their field names, each once, in
// the order of the row that made it, with an index built once for all the
// rows that share it.
type FieldKeys struct {
	names  []string
	index  map[string]int // name to its position in names
	sorted []int          // positions in names, by name: the JSON order
}

// NewFieldKeys makes the shape of rows with the field names names, each
// once, in the order they first appear. It keeps and overwrites names.
func NewFieldKeys(names []string) *FieldKeys {
	k := &FieldKeys{index: make(map[string]int, len(names))}
	uniq := names[:0]
	for _, n := range names {
		if _, ok := k.index[n]; !ok {
			k.index[n] = len(uniq)
			uniq = append(uniq, n)
		}
	}
	k.names = uniq
	k.sorted = make([]int, len(uniq))
	for i := range k.sorted {
		k.sorted[i] = i
	}
	slices.SortFunc(k.sorted, func(a, b int) int { return strings.Compare(uniq[a], uniq[b]) })
	return k
}

// FieldsOf makes the Fields of m; nil gives the zero Fields.
func FieldsOf(m map[string]string) Fields {
	if m == nil {
		return Fields{}
	}
	names := slices.Sorted(maps.Keys(m))
	var text strings.Builder
	offs := make([]uint32, 0, len(names)+1)
	for _, n := range names {
		offs = append(offs, uint32(text.Len()))
		text.WriteString(m[n])
	}
	offs = append(offs, uint32(text.Len()))
	return Fields{keys: NewFieldKeys(names), text: text.String(), offs: offs}
}

// Get returns the value of the field name, "" when the row has no such field.
func (f Fields) Get(name string) string {
	v, _ := f.Lookup(name)
	return v
}

// Lookup returns the value of the field name and whether the row has it.
func (f Fields) Lookup(name string) (string, bool) {
	if f.keys == nil {
		return "", false
	}
	i, ok := f.keys.index[name]
	if !ok {
		return "", false
	}
	return f.text[f.offs[i]:f.offs[i+1]], true
}

// Len returns the number of fields.
func (f Fields) Len() int {
	if f.keys == nil {
		return 0
	}
	return len(f.keys.names)
}

// All yields every field and its value, by field name.
func (f Fields) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		if f.keys == nil {
			return
		}
		for _, i := range f.keys.sorted {
			if !yield(f.keys.names[i], f.text[f.offs[i]:f.offs[i+1]]) {
				return
			}
		}
	}
}

// Set sets the field name to value, adding the field if the row lacks it.
// It is meant for tests and rare edits: it copies the row.
func (f *Fields) Set(name, value string) {
	m := make(map[string]string, f.Len()+1)
	for k, v := range f.All() {
		m[k] = v
	}
	m[name] = value
	*f = FieldsOf(m)
}

// String formats the fields as fmt formats a map[string]string.
func (f Fields) String() string {
	if f.keys == nil {
		return "map[]"
	}
	var b strings.Builder
	b.WriteString("map[")
	for k, v := range f.All() {
		if b.Len() > len("map[") {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte(':')
		b.WriteString(v)
	}
	b.WriteByte(']')
	return b.String()
}

// MarshalJSON encodes the fields as encoding/json encodes a
// map[string]string: an object with its keys sorted, or null for the zero
// Fields. It leaves HTML characters as they are; encoding/json escapes them
// in what MarshalJSON returns, as it does in maps, unless told not to.
func (f Fields) MarshalJSON() ([]byte, error) {
	if f.keys == nil {
		return []byte("null"), nil
	}
	b := make([]byte, 0, len(f.text)+len(f.keys.names)*24+2)
	b = append(b, '{')
	for j, i := range f.keys.sorted {
		if j > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, f.keys.names[i])
		b = append(b, ':')
		b = appendJSONString(b, f.text[f.offs[i]:f.offs[i+1]])
	}
	return append(b, '}'), nil
}

// UnmarshalJSON decodes a JSON object of strings as encoding/json decodes
// it into a new map[string]string; null gives the zero Fields.
func (f *Fields) UnmarshalJSON(b []byte) error {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("fields: %w", err)
	}
	*f = FieldsOf(m)
	return nil
}

// appendJSONString appends s as encoding/json writes a string without
// HTML escaping: printable ASCII as is, anything else by encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(s) // a string: cannot fail
			return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// MaxRowText is the most value bytes a Fields row holds: its offsets are
// uint32.
const MaxRowText = math.MaxUint32

// Len returns the number of fields of the shape.
func (k *FieldKeys) Len() int { return len(k.names) }

// Name returns the name of the field at position i of the shape.
func (k *FieldKeys) Name(i int) string { return k.names[i] }

// Index returns the position of the field name in the shape.
func (k *FieldKeys) Index(name string) (int, bool) {
	i, ok := k.index[name]
	return i, ok
}

// NewFields makes a row of the shape keys whose values are laid out in
// text as offs says: value i is text[offs[i]:offs[i+1]], with
// len(offs) = len(keys' names)+1. The row keeps offs and text.
func NewFields(keys *FieldKeys, text string, offs []uint32) Fields {
	return Fields{keys: keys, text: text, offs: offs}
}

// WithText returns f with its values in text, laid out as f's offsets
// say: for a decoder that knows a row's shape and offsets before the
// bytes of its values are final.
func (f Fields) WithText(text string) Fields {
	f.text = text
	return f
}

// Keys returns the shape of f (nil for the zero Fields): rows that share
// it name the same fields at the same positions.
func (f Fields) Keys() *FieldKeys { return f.keys }

// Value returns the value at position i of f's shape.
func (f Fields) Value(i int) string { return f.text[f.offs[i]:f.offs[i+1]] }
