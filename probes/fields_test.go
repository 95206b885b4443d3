package probes

import (
	"bytes"
	"encoding/json"
	"maps"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/internal/lvmjson"
	"github.com/keel-storage/keel/probes/model"
)

// Set changes its row alone: not a copy, not the other rows of the report
// that share its shape and arrays.
func TestFieldsSet(t *testing.T) {
	rep, err := lvmjson.Decode([]byte(`{"report":[{"lv":[{"lv_name":"a","lv_tags":"t1"},{"lv_name":"b","lv_tags":"t2"}]}]}`))
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
	var z model.Fields
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
	var lvKeys, segKeys *model.FieldKeys
	for _, lv := range o.LVs {
		if lvKeys == nil {
			lvKeys = lv.Fields.Keys()
		}
		if lv.Fields.Keys() != lvKeys {
			t.Fatalf("%s: LV rows of more than one shape", lv.FullName)
		}
		for _, seg := range lv.Segments {
			if segKeys == nil {
				segKeys = seg.Fields.Keys()
			}
			if seg.Fields.Keys() != segKeys {
				t.Fatalf("%s: segment rows of more than one shape", lv.FullName)
			}
		}
	}
	if lvKeys == nil || segKeys == nil || lvKeys == segKeys || lvKeys.Len() != len(reportLVFields) || segKeys.Len() != len(reportSegFields) {
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
		var back model.Host
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		again, err := json.MarshalIndent(&back, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, again) {
			diff, _ := model.Diff(h, &back, 4)
			t.Errorf("%s: the host's JSON changes when decoded and encoded again: %q", name, diff)
		}
		for k, lv := range h.LVs {
			if !maps.Equal(fieldsMapOf(lv.Fields), fieldsMapOf(back.LVs[k].Fields)) {
				t.Errorf("%s: %s: fields %v, decoded %v", name, k, lv.Fields, back.LVs[k].Fields)
			}
		}
	}
}
