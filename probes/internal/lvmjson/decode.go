// Package lvmjson decodes the JSON of `lvm fullreport --reportformat json`
// into rows of model.Fields, fast: the shape of the report is fixed, so it
// needs no reflection, and the rows of a subreport share their keys and
// their values' storage. It decodes a report whole or while LVM writes it.
package lvmjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/keel-storage/keel/probes/model"
)

// Report is the JSON shape of `lvm fullreport --reportformat json`: every
// value a string, one report element per VG (plus one for orphan PVs),
// each element's subreports (vg, pv, lv, seg, pvseg) by name.
type Report struct {
	Report []map[string][]model.Fields `json:"report"`
	Log    []map[string]string         `json:"log"`
}

// Decode decodes lvm fullreport JSON into a Report. It gives
// what json.Unmarshal gives for that type with maps for rows (the same
// report, or an error where json.Unmarshal fails) at a fraction of the
// cost: the shape is fixed, so it needs no reflection; row keys are
// interned (every row of a subreport repeats the same names); the rows of
// a subreport are Fields that share one key list (their shape), and the
// values and offsets of many rows share one string and one array; each log
// row's map is made at its final size and its values share one string.
func Decode(b []byte) (Report, error) {
	return DecodeRows(b, nil, false)
}

// DecodeRows decodes b as Decode does, but builds only the
// rows of the subreports keep accepts (nil: every subreport) and, with
// firstOnly, only the first row of each of those: the other rows are read
// and checked as strictly, so b is an error exactly when it is for
// Decode, and they are left out of the report. The log is always
// built.
func DecodeRows(b []byte, keep func(subreport string) bool, firstOnly bool) (Report, error) {
	return decodeWith(&reportDecoder{b: b, keys: map[string]int32{}, keep: keep, firstOnly: firstOnly})
}

// DecodeStream decodes a report as DecodeRows does while the
// command writes it: grow is the next of hostio.Cmd.Consume. What it
// returns is what DecodeRows returns for the whole output when the
// command ends normally; a caller that sees the command fail decodes the
// whole output again (Probe).
func DecodeStream(grow func() ([]byte, bool), keep func(subreport string) bool) (Report, error) {
	return DecodeStreamTo(grow, keep, Watch{})
}

// Watch is told of a report's parts as a streamed decoding reads them, so
// that a caller can build on them while the command still writes the
// rest. Either function may be nil. Every call is made from the decoding
// goroutine, in the order the document holds the parts.
type Watch struct {
	// Subreport is handed the rows of a kept subreport of report element
	// elem (counted from 0) as soon as they are read. They are the rows
	// the returned Report holds.
	Subreport func(elem int, name string, rows []model.Fields)
	// ElementEnd is told that report element elem has been read whole.
	ElementEnd func(elem int)
}

// DecodeStreamTo is DecodeStream telling w of each subreport and report
// element as it is read. A document that repeats its "report" member
// reads into the elements already read, as encoding/json does, and w is
// told of them again.
func DecodeStreamTo(grow func() ([]byte, bool), keep func(subreport string) bool, w Watch) (Report, error) {
	b, done := grow()
	d := &reportDecoder{b: b, keys: map[string]int32{}, keep: keep, watch: w}
	if !done {
		d.grow = grow
	}
	return decodeWith(d)
}

func decodeWith(d *reportDecoder) (Report, error) {
	var rep Report
	if err := d.report(&rep); err != nil {
		return Report{}, err
	}
	return rep, nil
}

// avail reports whether byte j of the input is there, waiting for it
// while a streamed input grows: the decoder reads a stream exactly as it
// reads the whole input, only sooner.
func (d *reportDecoder) avail(j int) bool {
	for j >= len(d.b) {
		if d.grow == nil {
			return false
		}
		b, done := d.grow()
		if done {
			d.grow = nil
		}
		if len(b) > len(d.b) {
			d.b = b
		}
	}
	return true
}

// maxJSONDepth is encoding/json's limit on nested arrays and objects.
const maxJSONDepth = 10000

// reportDecoder reads one lvm fullreport document.
type reportDecoder struct {
	b []byte
	// grow, while set, gives b with more bytes as a streamed input grows
	// (hostio.Cmd.Consume); it is dropped once it says the input is whole.
	grow  func() ([]byte, bool)
	i     int              // next byte to read
	keys  map[string]int32 // interned row keys: index in names
	names []rowKey         // interned row keys by index
	row   []rowEntry       // the row being read
	prev  []int32          // the keys of the row read before, in order
	// vals holds decoded values back to back: the row's, or those of the
	// subreport rows in pend and then the row's.
	vals []byte
	// pend are the rows of the subreport being read whose values are in
	// vals: flushText gives them their text, one string for all of them.
	pend []pendingRow
	// offs is the array the next rows' value offsets go in; rows keep
	// parts of it, which are not written again.
	offs []uint32
	// shapes are the last Fields shapes made (at most maxShapes); shape
	// is the one used last, and evict the one a new shape replaces.
	shapes       []decoderShape
	shape, evict int
	// keep and firstOnly say which rows are built (DecodeRows).
	keep      func(subreport string) bool
	firstOnly bool
	// stopAtFirst ends the reading with errFirstRow as soon as the first
	// row of a kept subreport is in first (reportHead).
	stopAtFirst bool
	first       model.Fields
	// watch is told of the parts as they are read (DecodeStreamTo).
	watch Watch
}

// rowKey is an interned key; plain tells whether JSON holds it verbatim,
// without escapes.
type rowKey struct {
	name  string
	plain bool
}

// plainJSON reports whether s is ASCII without control characters, quotes and backslashes.
func plainJSON(s []byte) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// rowEntry is one key of a row (its index in reportDecoder.names) and its
// value's bytes in reportDecoder.vals. It holds no pointer: appending it
// needs no write barrier.
type rowEntry struct {
	key      int32
	off, end int
}

// pendingRow is a subreport row whose values, vals[start:end], are not yet
// its text; row is its index in the subreport.
type pendingRow struct{ row, start, end int }

// decoderShape is a Fields shape with the interned keys of the rows it
// was made for.
type decoderShape struct {
	ids  []int32
	keys *model.FieldKeys
}

// same reports whether row has the keys of the shape, in its order.
func (s *decoderShape) same(row []rowEntry) bool {
	if len(row) != len(s.ids) {
		return false
	}
	for i, e := range row {
		if e.key != s.ids[i] {
			return false
		}
	}
	return true
}

const (
	// maxShapes bounds the Fields shapes a decoder keeps to compare rows
	// with: a full report has four (vg, pv, lv, seg).
	maxShapes = 8
	// textChunk is about how many bytes of values the rows of one string
	// share (a few dozen LV rows), and offsChunk how many offsets the rows
	// of one array do: the report's values are not copied again as they
	// would be in one buffer that grows.
	textChunk = 16 << 10
	offsChunk = 4 << 10
)

// syntaxError describes malformed JSON at the current offset.
func (d *reportDecoder) syntaxError(what string) error {
	if !d.avail(d.i) {
		return fmt.Errorf("unexpected end of JSON input (%s)", what)
	}
	return fmt.Errorf("offset %d: invalid character %q (%s)", d.i, d.b[d.i], what)
}

// valueError describes the value at the current offset, which is not the
// kind wanted: a syntax error if no JSON value starts there.
func (d *reportDecoder) valueError(want string) error {
	kind := ""
	if d.avail(d.i) {
		switch c := d.b[d.i]; {
		case c == '{':
			kind = "object"
		case c == '[':
			kind = "array"
		case c == '"':
			kind = "string"
		case c == 't' || c == 'f':
			kind = "bool"
		case c == 'n':
			kind = "null"
		case c == '-' || c >= '0' && c <= '9':
			kind = "number"
		}
	}
	if kind == "" {
		return d.syntaxError("looking for a value")
	}
	return fmt.Errorf("offset %d: cannot decode a JSON %s into %s", d.i, kind, want)
}

// ws skips JSON white space and returns the next byte, 0 at the end.
func (d *reportDecoder) ws() byte {
	for ; d.i < len(d.b) || d.avail(d.i); d.i++ {
		switch c := d.b[d.i]; c {
		case ' ', '\t', '\n', '\r':
		default:
			return c
		}
	}
	return 0
}

// null consumes a null literal if one is next.
func (d *reportDecoder) null() (bool, error) {
	if d.ws() != 'n' {
		return false, nil
	}
	return true, d.literal("null")
}

func (d *reportDecoder) literal(lit string) error {
	if !d.avail(d.i+len(lit)-1) || string(d.b[d.i:d.i+len(lit)]) != lit {
		return d.syntaxError("in literal " + lit)
	}
	d.i += len(lit)
	return nil
}

// next consumes the ',' between members or the closing byte of a
// container; more tells which.
func (d *reportDecoder) next(closing byte) (more bool, err error) {
	switch d.ws() {
	case ',':
		d.i++
		return true, nil
	case closing:
		d.i++
		return false, nil
	}
	return false, d.syntaxError("after a value")
}

// open consumes the opening byte of a container, reporting whether it is
// empty (and then consumes its closing byte too).
func (d *reportDecoder) open(opening, closing byte, want string) (empty bool, err error) {
	if d.ws() != opening {
		return false, d.valueError(want)
	}
	d.i++
	if d.ws() == closing {
		d.i++
		return true, nil
	}
	return false, nil
}

// key reads an object key and the ':' after it and returns it; with
// intern, it keeps one copy of each distinct key and returns its index in
// d.names too (-1 without). Rows of one subreport list the same keys in the
// same order, so a row key is first compared with the key the previous row
// had at its place.
func (d *reportDecoder) key(intern bool) (int32, string, error) {
	if d.ws() != '"' {
		return -1, "", d.syntaxError("looking for an object key")
	}
	if n := len(d.row); intern && n < len(d.prev) {
		// The previous row's key at this place, needing no escapes, is
		// this key when the input holds it verbatim and then a '"'.
		id := d.prev[n]
		if k := d.names[id]; k.plain {
			if end := d.i + 1 + len(k.name); (end < len(d.b) || d.avail(end)) && d.b[end] == '"' && string(d.b[d.i+1:end]) == k.name {
				d.i = end + 1
				if d.ws() != ':' {
					return -1, "", d.syntaxError("after an object key")
				}
				d.i++
				return id, k.name, nil
			}
		}
	}
	start := len(d.vals)
	var err error
	if d.vals, err = d.str(d.vals); err != nil {
		return -1, "", err
	}
	raw := d.vals[start:]
	d.vals = d.vals[:start]
	if d.ws() != ':' {
		return -1, "", d.syntaxError("after an object key")
	}
	d.i++
	if !intern {
		return -1, string(raw), nil
	}
	if id, ok := d.keys[string(raw)]; ok {
		return id, d.names[id].name, nil
	}
	if len(d.names) == math.MaxInt32 {
		return -1, "", fmt.Errorf("offset %d: more than %d distinct keys", d.i, math.MaxInt32)
	}
	id := int32(len(d.names))
	k := rowKey{name: string(raw), plain: plainJSON(raw)}
	d.names = append(d.names, k)
	d.keys[k.name] = id
	return id, k.name, nil
}

// str reads the JSON string at d.i and appends its decoded bytes to buf.
// Plain ASCII is copied as is; a string with escapes or other bytes is
// decoded by encoding/json itself, for its exact handling of surrogates and
// invalid UTF-8.
func (d *reportDecoder) str(buf []byte) ([]byte, error) {
	start := d.i
	for j := start + 1; j < len(d.b) || d.avail(j); j++ {
		switch c := d.b[j]; {
		case c == '"':
			d.i = j + 1
			return append(buf, d.b[start+1:j]...), nil
		case c == '\\' || c < 0x20 || c >= 0x80:
			return d.strSlow(buf)
		}
	}
	d.i = len(d.b)
	return buf, d.syntaxError("in string literal")
}

func (d *reportDecoder) strSlow(buf []byte) ([]byte, error) {
	start := d.i
	j := start + 1
	for ; (j < len(d.b) || d.avail(j)) && d.b[j] != '"'; j++ {
		if d.b[j] == '\\' {
			j++
		}
	}
	if !d.avail(j) {
		d.i = len(d.b)
		return buf, d.syntaxError("in string literal")
	}
	var s string
	if err := json.Unmarshal(d.b[start:j+1], &s); err != nil {
		return buf, fmt.Errorf("offset %d: %w", start, err)
	}
	d.i = j + 1
	return append(buf, s...), nil
}

// report reads the whole document: the "report" and "log" members (matched
// without regard to case, as encoding/json does); others are checked and
// skipped.
func (d *reportDecoder) report(rep *Report) error {
	if null, err := d.null(); null || err != nil {
		return d.end(err)
	}
	empty, err := d.open('{', '}', "the report")
	for more := !empty; err == nil && more; {
		var k string
		if _, k, err = d.key(false); err != nil {
			break
		}
		switch {
		case strings.EqualFold(k, "report"):
			err = d.elements(&rep.Report)
		case strings.EqualFold(k, "log"):
			err = d.rows(&rep.Log)
		default:
			err = d.skip(1)
		}
		if err == nil {
			more, err = d.next('}')
		}
	}
	return d.end(err)
}

// end checks that only white space follows the document.
func (d *reportDecoder) end(err error) error {
	if d.ws(); err == nil && d.avail(d.i) {
		err = d.syntaxError("after the top-level value")
	}
	return err
}

// elements reads the "report" array, one object per VG. Like
// encoding/json, it decodes into the elements a slice already has.
func (d *reportDecoder) elements(dst *[]map[string][]model.Fields) error {
	n := 0
	return decodeArray(d, dst, "report elements", func(el *map[string][]model.Fields) error {
		n++
		err := d.element(el, n-1)
		if err == nil && d.watch.ElementEnd != nil {
			d.watch.ElementEnd(n - 1)
		}
		return err
	})
}

// element reads report element i: subreport name to rows.
func (d *reportDecoder) element(dst *map[string][]model.Fields, i int) error {
	if null, err := d.null(); null || err != nil {
		*dst = nil
		return err
	}
	empty, err := d.open('{', '}', "a report element")
	if err != nil {
		return err
	}
	if *dst == nil {
		*dst = make(map[string][]model.Fields, 5)
	}
	for more := !empty; more; {
		_, name, err := d.key(true)
		if err != nil {
			return err
		}
		if d.keep != nil && !d.keep(name) {
			if err := d.skipRows(); err != nil {
				return err
			}
		} else {
			var rows []model.Fields
			if err := d.subreportRows(&rows); err != nil {
				return err
			}
			(*dst)[name] = rows
			if d.watch.Subreport != nil {
				d.watch.Subreport(i, name, rows)
			}
		}
		if more, err = d.next('}'); err != nil {
			return err
		}
	}
	return nil
}

// rows reads an array of rows.
func (d *reportDecoder) rows(dst *[]map[string]string) error {
	return decodeArray(d, dst, "rows", d.oneRow)
}

// subreportRows reads a subreport's rows: all of them, or with firstOnly
// the first one built and the others read and checked.
func (d *reportDecoder) subreportRows(dst *[]model.Fields) error {
	d.vals, d.pend = d.vals[:0], d.pend[:0]
	if !d.firstOnly {
		return d.fieldsRows(dst)
	}
	var first [1]model.Fields
	n := 0
	none := []struct{}{}
	err := decodeArray(d, &none, "rows", func(*struct{}) error {
		if n++; n == 1 {
			if err := d.fieldsRow(first[:], 0); err != nil || !d.stopAtFirst {
				return err
			}
			d.flushText(first[:])
			d.first = first[0]
			return errFirstRow
		}
		return d.skipRow()
	})
	switch {
	case none == nil:
		*dst = nil
	case n == 0:
		*dst = []model.Fields{}
	default:
		d.flushText(first[:])
		*dst = first[:]
	}
	return err
}

// fieldsRows reads an array of rows as decodeArray does into a new slice.
// Every few rows, and at the end, the rows read give their values one
// string (flushText): the slice they are in is at hand here.
func (d *reportDecoder) fieldsRows(dst *[]model.Fields) error {
	if null, err := d.null(); null || err != nil {
		*dst = nil
		return err
	}
	empty, err := d.open('[', ']', "rows")
	if err != nil {
		return err
	}
	var rows []model.Fields
	for more := !empty; more; {
		if len(rows) == cap(rows) {
			// Double, where append grows a large slice by a quarter:
			// an lv subreport has thousands of rows.
			rows = slices.Grow(rows, max(len(rows), 4))
		}
		rows = append(rows, model.Fields{})
		if err := d.fieldsRow(rows, len(rows)-1); err != nil {
			return err
		}
		if len(d.vals) >= textChunk {
			d.flushText(rows)
		}
		if more, err = d.next(']'); err != nil {
			return err
		}
	}
	d.flushText(rows)
	if rows == nil {
		rows = []model.Fields{}
	}
	*dst = rows
	return nil
}

// skipRows reads and checks an array of rows without building them.
func (d *reportDecoder) skipRows() error {
	var none []struct{}
	return decodeArray(d, &none, "rows", func(*struct{}) error { return d.skipRow() })
}

// skipRow reads and checks one row without building it.
func (d *reportDecoder) skipRow() error {
	mark := len(d.vals)
	_, err := d.readRow()
	d.vals = d.vals[:mark]
	return err
}

// fieldsRow reads one row of a subreport, an object of strings (null is
// ""), into rows[i], a Fields of the shape of its keys (null gives the
// zero Fields). Its offsets are set; its values stay in d.vals until
// flushText.
func (d *reportDecoder) fieldsRow(rows []model.Fields, i int) error {
	start := len(d.vals)
	null, err := d.readRow()
	if err != nil || null {
		return err
	}
	keys := d.rowShape()
	row := d.row
	if len(row) != keys.Len() {
		// A key repeats: as in a map, its last value counts. The values
		// are copied in the shape's order after the row's.
		last := make([]rowEntry, keys.Len())
		for _, e := range row {
			j, _ := keys.Index(d.names[e.key].name)
			last[j] = e
		}
		start = len(d.vals)
		for j, e := range last {
			off := len(d.vals)
			d.vals = append(d.vals, d.vals[e.off:e.end]...)
			last[j].off, last[j].end = off, len(d.vals)
		}
		row = last
	}
	if uint64(len(d.vals)-start) > model.MaxRowText {
		return fmt.Errorf("offset %d: a row of more than %d bytes", d.i, uint64(model.MaxRowText))
	}
	n := len(row) + 1
	if cap(d.offs)-len(d.offs) < n {
		d.offs = make([]uint32, 0, max(offsChunk, n))
	}
	k := len(d.offs)
	for _, e := range row {
		d.offs = append(d.offs, uint32(e.off-start))
	}
	d.offs = append(d.offs, uint32(len(d.vals)-start))
	rows[i] = model.NewFields(keys, "", d.offs[k:k+n:k+n])
	d.pend = append(d.pend, pendingRow{row: i, start: start, end: len(d.vals)})
	return nil
}

// rowShape returns the Fields shape of the keys of d.row: the shape of the
// row before when they are the same, as they are in a subreport.
func (d *reportDecoder) rowShape() *model.FieldKeys {
	if d.shape < len(d.shapes) && d.shapes[d.shape].same(d.row) {
		return d.shapes[d.shape].keys
	}
	for i := range d.shapes {
		if d.shapes[i].same(d.row) {
			d.shape = i
			return d.shapes[i].keys
		}
	}
	ids := make([]int32, len(d.row))
	names := make([]string, len(d.row))
	for i, e := range d.row {
		ids[i], names[i] = e.key, d.names[e.key].name
	}
	s := decoderShape{ids: ids, keys: model.NewFieldKeys(names)}
	if len(d.shapes) < maxShapes {
		d.shapes = append(d.shapes, s)
		d.shape = len(d.shapes) - 1
	} else {
		d.shapes[d.evict] = s
		d.shape, d.evict = d.evict, (d.evict+1)%maxShapes
	}
	return s.keys
}

// flushText gives the pending rows, which are in rows, their values: one
// string for all of them.
func (d *reportDecoder) flushText(rows []model.Fields) {
	if len(d.pend) > 0 {
		text := string(d.vals)
		for _, p := range d.pend {
			rows[p.row] = rows[p.row].WithText(text[p.start:p.end])
		}
	}
	d.vals, d.pend = d.vals[:0], d.pend[:0]
}

// decodeArray reads a JSON array into *dst with encoding/json's rules:
// null gives nil, [] an empty slice, and element i is decoded into what
// the slice holds at i.
func decodeArray[T any](d *reportDecoder, dst *[]T, want string, elem func(*T) error) error {
	if null, err := d.null(); null || err != nil {
		*dst = nil
		return err
	}
	empty, err := d.open('[', ']', want)
	if err != nil {
		return err
	}
	s := *dst
	i := 0
	for more := !empty; more; i++ {
		if i >= cap(s) {
			s = slices.Grow(s, 1)
		}
		if i >= len(s) {
			s = s[:i+1]
		}
		if err := elem(&s[i]); err != nil {
			*dst = s
			return err
		}
		if more, err = d.next(']'); err != nil {
			*dst = s
			return err
		}
	}
	if i == 0 {
		s = []T{}
	}
	*dst = s[:i]
	return nil
}

// readRow reads one row, an object of strings (null is ""), into d.row,
// appending its values to d.vals; null tells that the row is JSON null.
func (d *reportDecoder) readRow() (null bool, err error) {
	if null, err := d.null(); null || err != nil {
		return null, err
	}
	empty, err := d.open('{', '}', "a row")
	if err != nil {
		return false, err
	}
	d.row = d.row[:0]
	for more := !empty; more; {
		k, _, err := d.key(true)
		if err != nil {
			return false, err
		}
		e := rowEntry{key: k, off: len(d.vals)}
		switch d.ws() {
		case '"':
			if d.vals, err = d.str(d.vals); err != nil {
				return false, err
			}
		case 'n':
			if err := d.literal("null"); err != nil {
				return false, err
			}
		default:
			return false, d.valueError("a string")
		}
		e.end = len(d.vals)
		d.row = append(d.row, e)
		if more, err = d.next('}'); err != nil {
			return false, err
		}
	}
	d.prev = d.prev[:0]
	for _, e := range d.row {
		d.prev = append(d.prev, e.key)
	}
	return false, nil
}

// oneRow reads one row, an object of strings (null is ""), into a map made
// at its final size, whose values share one string.
func (d *reportDecoder) oneRow(dst *map[string]string) error {
	d.vals = d.vals[:0]
	null, err := d.readRow()
	if err != nil {
		return err
	}
	if null {
		*dst = nil
		return nil
	}
	m := *dst
	if m == nil {
		m = make(map[string]string, len(d.row))
		*dst = m
	}
	vals := string(d.vals)
	for _, e := range d.row {
		if e.off == e.end {
			m[d.names[e.key].name] = ""
		} else {
			m[d.names[e.key].name] = vals[e.off:e.end]
		}
	}
	return nil
}

// skip checks and skips one JSON value of any kind; depth counts the arrays
// and objects around it.
func (d *reportDecoder) skip(depth int) error {
	switch c := d.ws(); c {
	case '{', '[':
		if depth >= maxJSONDepth {
			return fmt.Errorf("offset %d: exceeded max depth", d.i)
		}
		closing := byte(']')
		if c == '{' {
			closing = '}'
		}
		empty, err := d.open(c, closing, "")
		for more := !empty; err == nil && more; {
			if c == '{' {
				if d.ws() != '"' {
					return d.syntaxError("looking for an object key")
				}
				if _, err = d.str(nil); err != nil {
					return err
				}
				if d.ws() != ':' {
					return d.syntaxError("after an object key")
				}
				d.i++
			}
			if err = d.skip(depth + 1); err == nil {
				more, err = d.next(closing)
			}
		}
		return err
	case '"':
		_, err := d.str(nil)
		return err
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	}
	return d.number()
}

// number checks and skips a JSON number.
func (d *reportDecoder) number() error {
	j := d.i
	digits := func() bool {
		k := j
		for d.avail(j) && d.b[j] >= '0' && d.b[j] <= '9' {
			j++
		}
		return j > k
	}
	if d.avail(j) && d.b[j] == '-' {
		j++
	}
	switch {
	case d.avail(j) && d.b[j] == '0':
		j++
	case !digits():
		d.i = j
		return d.syntaxError("looking for a value")
	}
	if d.avail(j) && d.b[j] == '.' {
		j++
		if !digits() {
			d.i = j
			return d.syntaxError("after decimal point in numeric literal")
		}
	}
	if d.avail(j) && (d.b[j] == 'e' || d.b[j] == 'E') {
		j++
		if d.avail(j) && (d.b[j] == '+' || d.b[j] == '-') {
			j++
		}
		if !digits() {
			d.i = j
			return d.syntaxError("in exponent of numeric literal")
		}
	}
	d.i = j
	return nil
}

// errFirstRow ends a decoder with stopAtFirst once it has the first row it
// was asked for.
var errFirstRow = errors.New("first row read")

// Head reads the two parts of a report the retry of failed fields needs
// without reading the rows between them: the log, the last member of the
// document as LVM prints it (the log report closes the report group), and
// the field names of the first LV row. found is false when either is not
// where LVM puts it; the caller then reads the whole report.
//
// The log is taken from the last `"log"` followed by ':' and '['. In JSON
// a '"' inside a string is escaped, so those bytes are an object key; and
// when its array is followed only by the '}' and white space that end the
// document, that object is the document itself.
func Head(b []byte) (log []map[string]string, lvKeys []string, found bool) {
	at := bytes.LastIndex(b, []byte(`"log"`))
	if at < 0 {
		return nil, nil, false
	}
	d := reportDecoder{b: b, i: at, keys: map[string]int32{}}
	if _, k, err := d.key(false); err != nil || k != "log" || d.ws() != '[' {
		return nil, nil, false
	}
	if err := d.rows(&log); err != nil {
		return nil, nil, false
	}
	if more, err := d.next('}'); err != nil || more || d.end(nil) != nil {
		return nil, nil, false
	}
	h := reportDecoder{b: b, keys: map[string]int32{}, keep: func(sub string) bool { return sub == "lv" }, firstOnly: true, stopAtFirst: true}
	var rep Report
	if err := h.report(&rep); !errors.Is(err, errFirstRow) {
		return nil, nil, false
	}
	for k := range h.first.All() {
		lvKeys = append(lvKeys, k)
	}
	return log, lvKeys, len(lvKeys) > 0
}
