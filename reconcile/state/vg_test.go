package state

import (
	"strings"
	"testing"
	"time"
)

func TestSeeVGs(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	st := New()
	if !st.SeeVGs(map[string]string{"vmdata": "u1"}, nil, t0) {
		t.Fatal("first sight not recorded")
	}
	// A later sight of another UUID keeps the first: that is what JudgeVG
	// compares with.
	if st.SeeVGs(map[string]string{"vmdata": "u2"}, nil, t0.Add(time.Hour)) {
		t.Error("a second sight changed the record")
	}
	if rec := st.VGs["vmdata"]; rec.UUID != "u1" || !rec.FirstSeen.Equal(t0) {
		t.Errorf("record %+v, want u1 at %v", rec, t0)
	}
	// Gone: forgotten, so the next VG under the name is recorded afresh.
	if !st.SeeVGs(nil, []string{"vmdata", "other"}, t0) || len(st.VGs) != 0 {
		t.Errorf("gone VG kept: %+v", st.VGs)
	}
	if st.SeeVGs(map[string]string{"x": ""}, nil, t0) {
		t.Error("a VG without a UUID recorded")
	}
}

func TestJudgeVG(t *testing.T) {
	rec := VG{UUID: "u1", FirstSeen: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)}
	if why := JudgeVG(rec, true, "u1"); why != "" {
		t.Errorf("same UUID: %q", why)
	}
	if why := JudgeVG(VG{}, false, "u2"); why != "" {
		t.Errorf("no record: %q", why)
	}
	why := JudgeVG(rec, true, "u2")
	for _, want := range []string{"u2", "u1", "2026-05-01T10:00:00Z"} {
		if !strings.Contains(why, want) {
			t.Errorf("another UUID: %q lacks %q", why, want)
		}
	}
}

func TestAckVG(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	st := New()
	st.SeeVGs(map[string]string{"vmdata": "u1"}, nil, t0)
	st.AckVG("vmdata", "u2", t0.Add(time.Hour))
	rec := st.VGs["vmdata"]
	if rec.UUID != "u2" || !rec.FirstSeen.Equal(t0) || !rec.Acknowledged.Equal(t0.Add(time.Hour)) {
		t.Errorf("acknowledged record %+v", rec)
	}
	if why := JudgeVG(rec, true, "u2"); why != "" {
		t.Errorf("acknowledged UUID still judged: %q", why)
	}
}
