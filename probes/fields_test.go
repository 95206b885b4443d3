package probes

import (
	"bytes"
	"encoding/json"
	"maps"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestFieldsZero(t *testing.T) {
	var f Fields
	if v, ok := f.Lookup("a"); v != "" || ok || f.Get("a") != "" || f.Len() != 0 {
		t.Errorf("zero Fields: Lookup %q %v, Len %d", v, ok, f.Len())
	}
	for k := range f.All() {
		t.Errorf("zero Fields yields %q", k)
	}
	if b, err := json.Marshal(f); string(b) != "null" || err != nil {
		t.Errorf("zero Fields encodes as %s (%v)", b, err)
	}
	if s := f.String(); s != "map[]" {
		t.Errorf("String %q", s)
	}
	g := fieldsOf(map[string]string{"a": "1"})
	if err := json.Unmarshal([]byte("null"), &g); err != nil || g.keys != nil {
		t.Errorf("null decodes as %v (%v)", g, err)
	}
	if err := json.Unmarshal([]byte(" {} "), &g); err != nil || g.keys == nil || g.Len() != 0 {
		t.Errorf("{} decodes as %#v (%v)", g, err)
	}
	if b, err := json.Marshal(g); string(b) != "{}" || err != nil {
		t.Errorf("empty Fields encodes as %s (%v)", b, err)
	}
}

// Fields encodes as encoding/json encodes the map, HTML escaped or not,
// indented or not, and decodes back to it.
func TestFieldsJSONLikeMap(t *testing.T) {
	for _, m := range []map[string]string{
		nil,
		{},
		{"lv_name": "lv0", "vg_name": "vg0", "lv_tags": "a,b", "empty": ""},
		{"b": "2", "a": "1", "c": "3", "B": "0", "": "empty key", "a\x00": "nul"},
		{"html": "<a href=\"x\">&amp;</a>", "ctl": "\x00\x01\b\f\n\r\t\x1f\x7f", "seps": "\u2028\u2029"},
		{"utf8": "café 😀", "bad": "\xff\xfe a \xc3", "k\xffey": "bad key", "\\": "\\\"/"},
	} {
		f := fieldsOf(m)
		type withFields struct {
			F Fields `json:"f"`
		}
		type withMap struct {
			F map[string]string `json:"f"`
		}
		for _, enc := range []struct {
			name string
			enc  func(v any) ([]byte, error)
		}{
			{"Marshal", json.Marshal},
			{"MarshalIndent", func(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") }},
			{"Encoder without HTML escapes", func(v any) ([]byte, error) {
				var b bytes.Buffer
				e := json.NewEncoder(&b)
				e.SetEscapeHTML(false)
				e.SetIndent("", "\t")
				err := e.Encode(v)
				return b.Bytes(), err
			}},
		} {
			got, err := enc.enc(withFields{f})
			if err != nil {
				t.Fatalf("%s %q: %v", enc.name, m, err)
			}
			want, _ := enc.enc(withMap{m})
			if !bytes.Equal(got, want) {
				t.Errorf("%s %q:\n%s\nthe map's:\n%s", enc.name, m, got, want)
			}
			var back withFields
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatalf("%s %q: %s does not decode: %v", enc.name, m, got, err)
			}
			var wantBack withMap
			_ = json.Unmarshal(want, &wantBack)
			if gotBack := fieldsMapOf(back.F); !reflect.DeepEqual(gotBack, wantBack.F) {
				t.Errorf("%s %q: decodes as %q, the map as %q", enc.name, m, gotBack, wantBack.F)
			}
		}
	}
}

func TestFieldsUnmarshal(t *testing.T) {
	var f Fields
	if err := json.Unmarshal([]byte(`{"a":"1","b":null,"a":"2"}`), &f); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"a": "2", "b": ""}; !reflect.DeepEqual(fieldsMapOf(f), want) {
		t.Errorf("%v, want %v", f, want)
	}
	for _, bad := range []string{`{"a":1}`, `[]`, `"x"`, `{"a":"1"`} {
		var g Fields
		if err := json.Unmarshal([]byte(bad), &g); err == nil {
			t.Errorf("%s decodes as %v", bad, g)
		}
	}
}

// Set changes its row alone: not a copy, not the other rows of the report
// that share its shape and arrays.
func TestFieldsSet(t *testing.T) {
	rep, err := decodeLVMReport([]byte(`{"report":[{"lv":[{"lv_name":"a","lv_tags":"t1"},{"lv_name":"b","lv_tags":"t2"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	rows := rep.Report[0]["lv"]
	copied := rows[0]
	rows[0].Set("lv_tags", "")
	rows[0].Set("lv_time", "2026-01-01")
	if want := (map[string]string{"lv_name": "a", "lv_tags": "", "lv_time": "2026-01-01"}); !reflect.DeepEqual(fieldsMapOf(rows[0]), want) {
		t.Errorf("after Set: %v, want %v", rows[0], want)
	}
	if want := (map[string]string{"lv_name": "a", "lv_tags": "t1"}); !reflect.DeepEqual(fieldsMapOf(copied), want) {
		t.Errorf("copy after Set: %v, want %v", copied, want)
	}
	if want := (map[string]string{"lv_name": "b", "lv_tags": "t2"}); !reflect.DeepEqual(fieldsMapOf(rows[1]), want) {
		t.Errorf("other row after Set: %v, want %v", rows[1], want)
	}
	var z Fields
	z.Set("k", "v")
	if z.Get("k") != "v" || z.Len() != 1 || z.String() != "map[k:v]" {
		t.Errorf("Set on the zero Fields: %v", z)
	}
}

// The rows of a report share their shape, and their values are not copied
// row by row.
func TestFieldsShareShape(t *testing.T) {
	raw := recorded(t, "mixed", fullReportCmd.String())
	o, err := parseFullReport(raw)
	if err != nil {
		t.Fatal(err)
	}
	var lvKeys, segKeys *fieldKeys
	for _, lv := range o.LVs {
		if lvKeys == nil {
			lvKeys = lv.Fields.keys
		}
		if lv.Fields.keys != lvKeys {
			t.Fatalf("%s: LV rows of more than one shape", lv.FullName)
		}
		for _, seg := range lv.Segments {
			if segKeys == nil {
				segKeys = seg.Fields.keys
			}
			if seg.Fields.keys != segKeys {
				t.Fatalf("%s: segment rows of more than one shape", lv.FullName)
			}
		}
	}
	if lvKeys == nil || segKeys == nil || lvKeys == segKeys || len(lvKeys.names) != len(reportLVFields) || len(segKeys.names) != len(reportSegFields) {
		t.Fatalf("shapes %v %v", lvKeys, segKeys)
	}
	lv := o.LVs["vg0/tp"]
	if lv == nil || lv.Fields.Get("lv_name") != "tp" || lv.Fields.Get("vg_name") != "vg0" || lv.Segments[0].Fields.Get("segtype") != "thin-pool" {
		t.Fatalf("vg0/tp: %+v", lv)
	}
}

// A probed host's JSON decodes to a host that encodes to the same JSON.
func TestHostJSONRoundTrip(t *testing.T) {
	paths, _ := filepath.Glob("testdata/snapshots/*.txtar")
	if len(paths) < 10 {
		t.Fatalf("only %d snapshots", len(paths))
	}
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".txtar")
		h := probeSnapshot(t, name)
		b, err := json.MarshalIndent(h, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		var back Host
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		again, err := json.MarshalIndent(&back, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, again) {
			diff, _ := Diff(h, &back, 4)
			t.Errorf("%s: the host's JSON changes when decoded and encoded again: %q", name, diff)
		}
		for k, lv := range h.LVs {
			if !maps.Equal(fieldsMapOf(lv.Fields), fieldsMapOf(back.LVs[k].Fields)) {
				t.Errorf("%s: %s: fields %v, decoded %v", name, k, lv.Fields, back.LVs[k].Fields)
			}
		}
	}
}
