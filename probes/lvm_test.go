package probes

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/internal/lvmjson"
	"github.com/keel-storage/keel/probes/model"
)

// mapReport is lvmjson.Report with maps for rows: what encoding/json decodes
// the report into.
type mapReport struct {
	Report []map[string][]map[string]string `json:"report"`
	Log    []map[string]string              `json:"log"`
}

// asMaps is rep with each Fields row as a map (the zero Fields as nil). It
// fails unless each row reads as its map does, through every method, and
// encodes to the same JSON.
func asMaps(t *testing.T, rep lvmjson.Report) mapReport {
	t.Helper()
	return eachSubreport(rep.Log, rep.Report, func(_ string, rows []model.Fields) ([]map[string]string, bool) {
		var mrows []map[string]string
		if rows != nil {
			mrows = make([]map[string]string, len(rows))
		}
		for j, r := range rows {
			mrows[j] = fieldsMap(t, r)
		}
		return mrows, true
	})
}

// eachSubreport builds a mapReport with log and, for each element of
// report (nil ones kept nil), the subreports rows maps to (false: left
// out).
func eachSubreport[R any](log []map[string]string, report []map[string][]R, rows func(name string, rows []R) ([]map[string]string, bool)) mapReport {
	out := mapReport{Log: log}
	if report != nil {
		out.Report = make([]map[string][]map[string]string, len(report))
	}
	for i, el := range report {
		if el == nil {
			continue
		}
		out.Report[i] = make(map[string][]map[string]string, len(el))
		for k, r := range el {
			if m, ok := rows(k, r); ok {
				out.Report[i][k] = m
			}
		}
	}
	return out
}

// fieldsMap is f as a map, checked against every method of f.
func fieldsMap(t *testing.T, f model.Fields) map[string]string {
	t.Helper()
	var m map[string]string
	if f.Keys() != nil {
		m = make(map[string]string, f.Len())
	}
	var names []string
	for k, v := range f.All() {
		if _, dup := m[k]; dup {
			t.Fatalf("All yields %q twice", k)
		}
		m[k] = v
		names = append(names, k)
	}
	if !slices.IsSorted(names) {
		t.Errorf("All yields %q, not sorted", names)
	}
	if len(m) != f.Len() {
		t.Errorf("Len %d, All yields %d", f.Len(), len(m))
	}
	for k, v := range m {
		if got, ok := f.Lookup(k); got != v || !ok || f.Get(k) != v {
			t.Errorf("Lookup(%q) = %q, %v; Get %q; want %q", k, got, ok, f.Get(k), v)
		}
	}
	if got, ok := f.Lookup("\x00absent"); got != "" || ok {
		t.Errorf("Lookup of an absent key: %q, %v", got, ok)
	}
	gotJSON, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if wantJSON, _ := json.Marshal(m); string(gotJSON) != string(wantJSON) {
		t.Errorf("JSON %s, the map's %s", gotJSON, wantJSON)
	}
	var back model.Fields
	if err := json.Unmarshal(gotJSON, &back); err != nil || !reflect.DeepEqual(fieldsMapOf(back), m) {
		t.Errorf("JSON %s reads back as %v (%v)", gotJSON, back, err)
	}
	return m
}

// fieldsMapOf is f as a map, unchecked.
func fieldsMapOf(f model.Fields) map[string]string {
	if f.Keys() == nil {
		return nil
	}
	return maps.Collect(f.All())
}

// sameAsEncodingJSON fails unless lvmjson.Decode gives what json.Unmarshal
// gives for in with maps for rows: the same report (nil and empty told
// apart) or an error from both.
func sameAsEncodingJSON(t *testing.T, in []byte) {
	t.Helper()
	var want mapReport
	werr := json.Unmarshal(in, &want)
	got, gerr := lvmjson.Decode(in)
	switch {
	case werr != nil && gerr == nil:
		t.Fatalf("%.200q: encoding/json fails (%v), lvmjson.Decode does not", in, werr)
	case werr == nil && gerr != nil:
		t.Fatalf("%.200q: lvmjson.Decode fails (%v), encoding/json does not", in, gerr)
	case werr == nil && !reflect.DeepEqual(asMaps(t, got), want):
		t.Fatalf("%.200q: lvmjson.Decode gives\n%#v\nencoding/json gives\n%#v", in, asMaps(t, got), want)
	}
	// The partial decodes of parseFullReport and fieldFailureRetry fail
	// on the same inputs and give the same rows, less the ones they skip.
	for _, c := range []struct {
		name      string
		keep      func(string) bool
		firstOnly bool
	}{
		{"parsedSubreport", parsedSubreport, false},
		{"first lv row", func(s string) bool { return s == "lv" }, true},
	} {
		part, perr := lvmjson.DecodeRows(in, c.keep, c.firstOnly)
		switch {
		case (werr == nil) != (perr == nil):
			t.Fatalf("%.200q: lvmjson.DecodeRows (%s) error %v, encoding/json %v", in, c.name, perr, werr)
		case werr == nil:
			if w := partOfReport(want, c.keep, c.firstOnly); !reflect.DeepEqual(asMaps(t, part), w) {
				t.Fatalf("%.200q: lvmjson.DecodeRows (%s) gives\n%#v\nwant\n%#v", in, c.name, asMaps(t, part), w)
			}
		}
	}
}

// partOfReport is rep with only the subreports keep accepts, and with
// firstOnly only their first rows.
func partOfReport(rep mapReport, keep func(string) bool, firstOnly bool) mapReport {
	return eachSubreport(rep.Log, rep.Report, func(name string, rows []map[string]string) ([]map[string]string, bool) {
		if firstOnly && len(rows) > 1 {
			rows = rows[:1]
		}
		return rows, keep(name)
	})
}

// The fast decoder reads every captured report, and the JSON shapes around
// it, exactly as encoding/json does.
func TestDecodeLVMReportMatchesEncodingJSON(t *testing.T) {
	seeds := fuzzSeeds(t, "FuzzParseFullReport")
	if len(seeds) < 5 {
		t.Fatalf("only %d captured reports", len(seeds))
	}
	for _, s := range seeds {
		sameAsEncodingJSON(t, s)
	}
	for _, s := range lvmReportEdgeCases {
		t.Run("", func(t *testing.T) { sameAsEncodingJSON(t, []byte(s)) })
	}
}

// lvmReportEdgeCases are JSON documents around the report's shape: nulls,
// empty containers, repeated and case-folded keys, escapes, bytes that are
// not UTF-8, members keel does not read, and malformed input.
var lvmReportEdgeCases = []string{
	``, ` `, `null`, ` null `, `nul`, `{}`, `[]`, `"report"`, `0`, `true`, `{} x`, "{}\x00", "\ufeff{}",
	`{"report":null,"log":null}`, `{"report":[],"log":[]}`, `{"report":[null,{}]}`,
	`{"report":[{"vg":null,"lv":[]}]}`, `{"report":[{"lv":[null,{},{"a":null}]}]}`,
	`{"REPORT":[{"lv":[{"lv_name":"a"}]}],"Log":[{"x":"y"}]}`,
	`{"report":[{"lv":[{"a":"1","a":"2","b":""}]}]}`,
	// Rows a partial decode (lvmjson.DecodeRows) reads without building them.
	`{"report":[{"pvseg":[{"a":"1"},null,{}],"lv":[{"a":"1"},{"b":null},null]}]}`,
	`{"report":[{"pvseg":[{"a":1}]}]}`, `{"report":[{"pvseg":{"a":"1"}}]}`, `{"report":[{"pvseg":[{"a":"1"}`,
	`{"report":[{"lv":[{"a":"1"},{"b":2}]}]}`, `{"report":[{"lv":[{"a":"1"},["b"]]}]}`, `{"report":[{"lv":[null,{"a":"1"}]}]}`,
	`{"report":[{"seg":[{"a":"\ud800"}],"pvseg":[{"a":"x\u0041"}]}]}`, `{"report":[{"pvseg":[{"a":"\q"}]}]}`,
	`{"report":[{"lv":[{"a":"1"}],"lv":[{"b":"2"}]}]}`,
	`{"report":[{"lv":[{"a":"1"}]},{"pv":[]}],"report":[{"lv":[{"b":"2"}],"vg":[]}]}`,
	`{"report":[{"lv":[{"a":"1"}]},{"pv":[]}],"report":[]}`,
	`{"report":[{"lv":[{"a":"1"}]}],"report":[null]}`,
	`{"log":[{"a":"1"},{"b":"2"}],"log":[{"c":"3"}]}`,
	`{"report":[{"lv":[{"lv_name":"a\"b\\c\/d\u00e9\ud83d\ude00\u0041\n\t"}]}]}`,
	`{"report":[{"lv":[{"lv_n\u0061me":"x"}]}]}`,
	`{"report":[{"lv":[{"a\\b":"1"},{"a\\b":"2"},{"a\b":"3"},{"a\\b":"4"}]}]}`,
	`{"report":[{"lv":[{"ab":"1"},{"ab\"":"2"},{"ab":"3"},{"a":"4"},{"abc":"5"}]}]}`,
	`{"report":[{"lv":[{"a":"1","b":"2"},{"b":"3","a":"4"},{"a":"5"},{"a":"6","b":"7","c":"8"}]}]}`,
	`{"report":[{"lv":[{"a":"1"},{"a" :"2"},{"a"x:"3"}]}]}`, `{"report":[{"lv":[{"a":"1"},{"a"`,
	"{\"report\":[{\"lv\":[{\"k\xff\":\"1\"},{\"k\xff\":\"2\"}]}]}",
	"{\"report\":[{\"lv\":[{\"lv_name\":\"caf\xc3\xa9 \xff\xfe\"}]}]}",
	"{\"report\":[{\"lv\":[{\"k\xff\":\"v\"}]}]}",
	`{"report":[{"lv":[{"a":"\ud800"}]}]}`, `{"report":[{"lv":[{"a":"\ud800\u0041"}]}]}`,
	`{"report":[{"lv":[{"a":"\x"}]}]}`, `{"report":[{"lv":[{"a":"\u12"}]}]}`,
	"{\"report\":[{\"lv\":[{\"a\":\"tab\there\"}]}]}",
	`{"other":{"a":[1,-2.5e+3,0.1,1E9,true,false,null,"s",{},[]]},"report":[]}`,
	`{"other":01}`, `{"other":1.}`, `{"other":-}`, `{"other":1e}`, `{"other":.5}`, `{"other":tru}`,
	`{"other":[1,]}`, `{"other":{"a" 1}}`, `{"other":{1:2}}`, `{"other":"\q"}`,
	`{"report":[{"lv":[{"a":1}]}]}`, `{"report":[{"lv":[{"a":true}]}]}`, `{"report":[{"lv":[{"a":{}}]}]}`,
	`{"report":[{"lv":[{"a":[]}]}]}`, `{"report":[{"lv":[5]}]}`, `{"report":[{"lv":{}}]}`, `{"report":[5]}`,
	`{"report":{}}`, `{"report":"x"}`, `{"log":[{"a":2}]}`, `{"log":{}}`,
	`{"report":[{"lv":[{"a":"1"}]}]`, `{"report":[{"lv":[{"a":"1"}]}]}}`, `{"report":[{"lv":[{"a":"1"]}]}`,
	`{"report":[{"lv":[{"a":"1",}]}]}`, `{"report":[{"lv":[{"a":"1"}],}]}`, `{"report" [`, `{"report":[{"lv":[{"a":"1`,
	`{"report":[{"lv":[{"a":x}]}]}`, `{"report":[{"lv":[{"a":}]}]}`, `{,}`, `{"a":1,}`,
	"{\"other\":" + deepArray(9998) + "}", "{\"other\":" + deepArray(9999) + "}", "{\"other\":" + deepArray(10000) + "}",
	// Rows of one shape with a key repeated, and a row of those keys in
	// another order.
	`{"report":[{"lv":[{"lv_name":"a","k":"v","k":"w"},{"lv_name":"b","k":"v","k":"x"},{"k":"z","lv_name":"c"},{"lv_name":"d","k":"y"}]}]}`,
	// More values than the rows of one string hold (textChunk).
	manyRows(400, 100),
	// More shapes than a decoder keeps (maxShapes), and the first again.
	`{"report":[{"lv":[{"a":"1"},{"b":"2"},{"c":"3"},{"d":"4"},{"e":"5"},{"f":"6"},{"g":"7"},{"h":"8"},{"i":"9"},{"j":"10"},{"a":"11"},{"j":"12"}]}]}`,
}

// manyRows is a report of n LV rows, each with a value of size bytes.
func manyRows(n, size int) string {
	var b strings.Builder
	b.WriteString(`{"report":[{"lv":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"lv_name":"lv%d","v":"%s","e":""}`, i, strings.Repeat(string(rune('a'+i%26)), size))
	}
	b.WriteString(`]}]}`)
	return b.String()
}

func deepArray(n int) string {
	b := make([]byte, 0, 2*n)
	for range n {
		b = append(b, '[')
	}
	for range n {
		b = append(b, ']')
	}
	return string(b)
}

// FuzzDecodeLVMReport checks the fast decoder against encoding/json on
// mutations of real reports and of the edge cases above.
func FuzzDecodeLVMReport(f *testing.F) {
	addSeeds(f, "FuzzParseFullReport")
	for _, s := range lvmReportEdgeCases {
		if len(s) < 1000 {
			f.Add([]byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) { sameAsEncodingJSON(t, b) })
}
