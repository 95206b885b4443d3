package model

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
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
	g := FieldsOf(map[string]string{"a": "1"})
	if err := json.Unmarshal([]byte("null"), &g); err != nil || g.Keys() != nil {
		t.Errorf("null decodes as %v (%v)", g, err)
	}
	if err := json.Unmarshal([]byte(" {} "), &g); err != nil || g.Keys() == nil || g.Len() != 0 {
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
		f := FieldsOf(m)
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

// fieldsMapOf is f as a map, unchecked.
func fieldsMapOf(f Fields) map[string]string {
	if f.Keys() == nil {
		return nil
	}
	return maps.Collect(f.All())
}
