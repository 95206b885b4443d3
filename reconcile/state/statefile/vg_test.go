package statefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A version 1 file (before VG records) reads as a state with no VG seen;
// the first sight is written, as version 2, with the absent records kept; a
// pass that sees nothing new does not write.
func TestLoadSeeingVGsUpgradesVersion1(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state.json")
	v1 := `{"version": 1, "absent": {"vmdata/vm-101-disk-0": {"first_seen": "2026-11-01T09:00:00Z"}}}`
	if err := os.WriteFile(p, []byte(v1), 0o600); err != nil {
		t.Fatal(err)
	}
	s := Store{Path: p}
	st, err := s.Load()
	if err != nil || st.VGs == nil || len(st.VGs) != 0 {
		t.Fatalf("version 1: %+v, %v; want no VG seen", st, err)
	}
	seen := map[string]string{"vmdata": "vWJdvG-XH2B-XEjO-avY4-oGlN-esGy-sIN668"}
	if st, err = s.LoadSeeingVGs(seen, nil, t0); err != nil || st.VGs["vmdata"].UUID != seen["vmdata"] {
		t.Fatalf("first sight: %+v, %v", st, err)
	}
	b, _ := os.ReadFile(p)
	for _, want := range []string{`"version": 4`, `"vmdata/vm-101-disk-0"`, `"uuid": "vWJdvG-XH2B-XEjO-avY4-oGlN-esGy-sIN668"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("written state lacks %s:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "acknowledged") {
		t.Errorf("a zero acknowledgement is written:\n%s", b)
	}
	fi, _ := os.Stat(p)
	// Another UUID later changes no record (JudgeVG compares with the
	// first), so nothing is written: a write renames a new file over it.
	seen["vmdata"] = "FuAzwE-nPEh-gY8L-tj03-E16l-ODli-Ps9nlE"
	if st, err = s.LoadSeeingVGs(seen, nil, t0.Add(1)); err != nil || st.VGs["vmdata"].UUID != "vWJdvG-XH2B-XEjO-avY4-oGlN-esGy-sIN668" {
		t.Fatalf("second sight: %+v, %v", st.VGs, err)
	}
	if fi2, _ := os.Stat(p); !os.SameFile(fi, fi2) {
		t.Error("a sight that changes nothing rewrote the state")
	}
}
