package state

import (
	"strings"
	"testing"
	"time"
)

// t0 is a fixed instant the records are stamped with.
var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func TestParseLVTime(t *testing.T) {
	for in, want := range map[string]time.Time{
		// as lvm fullreport prints it with the default report/time_format
		"2026-11-29 23:05:20 +0000": time.Date(2026, 11, 29, 23, 5, 20, 0, time.UTC),
		"2026-11-30 00:05:20 +0100": time.Date(2026, 11, 29, 23, 5, 20, 0, time.UTC),
		"1764457520":                time.Unix(1764457520, 0),
	} {
		got, ok := ParseLVTime(in)
		if !ok || !got.Equal(want) {
			t.Errorf("ParseLVTime(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "  ", "Sun Nov 29 2026", "0", "-5"} {
		if got, ok := ParseLVTime(in); ok {
			t.Errorf("ParseLVTime(%q) = %v, want not ok", in, got)
		}
	}
}

func TestJudge(t *testing.T) {
	first := time.Date(2026, 12, 1, 9, 0, 0, 500e6, time.UTC)
	before := first.Add(-time.Hour).Truncate(time.Second)
	bound := Absent{FirstSeen: first, Bound: []Binding{{UUID: "old", Created: before, Started: first.Add(time.Minute)}}}
	done := Absent{FirstSeen: first, Bound: []Binding{{UUID: "old", Created: before, Started: first.Add(time.Minute), Removed: first.Add(2 * time.Minute)}}}
	cases := []struct {
		name  string
		rec   Absent
		known bool
		lv    LV
		pin   string
		want  string // "" = may remove; else a substring of the reason
	}{
		// No record: the first sight could not be written, and the entry
		// may predate the LV by a week (the audit-first rollout).
		{"no record", Absent{}, false, LV{UUID: "a", Created: before}, "", "no record of when it first saw"},
		{"no record, no lv_time", Absent{}, false, LV{UUID: "a"}, "", "no record"},
		{"no record, pinned to this LV", Absent{}, false, LV{UUID: "a", Created: before}, "a", ""},
		{"created after first seen, pinned to this LV", Absent{FirstSeen: first}, true, LV{UUID: "a", Created: first.Add(time.Hour)}, "a", ""},
		{"created before first seen, pinned to another LV", Absent{FirstSeen: first}, true, LV{UUID: "b", Created: before}, "a", "pins uuid a"},
		{"the removed LV is back, pinned", done, true, LV{UUID: "old", Created: before}, "old", "never removes an LV twice"},
		{"created before first seen", Absent{FirstSeen: first}, true, LV{UUID: "a", Created: before}, "", ""},
		{"created the second before", Absent{FirstSeen: first}, true, LV{UUID: "a", Created: first.Truncate(time.Second).Add(-time.Second)}, "", ""},
		{"created in the same second", Absent{FirstSeen: first}, true, LV{UUID: "a", Created: first.Truncate(time.Second)}, "", "after keel first saw"},
		{"created after first seen", Absent{FirstSeen: first}, true, LV{UUID: "a", Created: first.Add(time.Hour)}, "", "a reused name"},
		{"creation time unknown", Absent{FirstSeen: first}, true, LV{UUID: "a"}, "", "no creation time"},
		{"the bound LV, unfinished", bound, true, LV{UUID: "old", Created: before}, "", ""},
		{"the bound LV, created after first seen: the binding wins", Absent{FirstSeen: first, Bound: []Binding{{UUID: "x", Started: first}}}, true, LV{UUID: "x", Created: first.Add(time.Hour)}, "", ""},
		{"another LV after a binding", bound, true, LV{UUID: "new", Created: before}, "", "uuid old"},
		{"another LV after a removal", done, true, LV{UUID: "new", Created: first.Add(time.Hour)}, "", "a reused name"},
		{"the removed LV is back", done, true, LV{UUID: "old", Created: before}, "", "never removes an LV twice"},
	}
	for _, c := range cases {
		got := Judge(c.rec, c.known, c.lv, c.pin)
		switch {
		case c.want == "" && got != "":
			t.Errorf("%s: refused (%s), want removable", c.name, got)
		case c.want != "" && !strings.Contains(got, c.want):
			t.Errorf("%s: got %q, want a refusal containing %q", c.name, got, c.want)
		}
	}
}

func TestSeeBindRemoved(t *testing.T) {
	st := New()
	if !st.See([]string{"vg/a", "vg/b"}, t0) {
		t.Fatal("See of new names reported no change")
	}
	if st.See([]string{"vg/a"}, t0.Add(time.Hour)) {
		t.Error("See of a known name reported a change")
	}
	if !st.Absent["vg/a"].FirstSeen.Equal(t0) {
		t.Errorf("first sight moved: %v", st.Absent["vg/a"].FirstSeen)
	}
	st.Bind("vg/a", LV{UUID: "u1"}, t0.Add(time.Minute))
	st.Bind("vg/a", LV{UUID: "u1"}, t0.Add(2*time.Minute))
	if n := len(st.Absent["vg/a"].Bound); n != 1 {
		t.Fatalf("binding the same LV twice: %d bindings", n)
	}
	st.Removed("vg/a", "u1", t0.Add(3*time.Minute))
	if b := st.Absent["vg/a"].Bound[0]; !b.Removed.Equal(t0.Add(3 * time.Minute)) {
		t.Errorf("removed not recorded: %+v", b)
	}
	// Binding a name keel never saw (keel wipe by hand) starts its record.
	st.Bind("vg/c", LV{UUID: "u2"}, t0)
	if r := st.Absent["vg/c"]; !r.FirstSeen.Equal(t0) || len(r.Bound) != 1 {
		t.Errorf("bind of an unseen name: %+v", r)
	}
	if got := Judge(st.Absent["vg/a"], true, LV{UUID: "u3", Created: t0.Add(-time.Hour)}, ""); got == "" {
		t.Error("an LV with another uuid after a removal was judged removable")
	}
}
