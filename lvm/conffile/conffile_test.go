package conffile

import "testing"

// The value LVM uses is the last assignment of a path, in a section that
// may appear twice (lvm.conf(5), "SYNTAX"); a commented line sets nothing.
func TestSetsAndBool(t *testing.T) {
	src := []byte("devices {\n\t# scan_lvs = 1\n\tscan_lvs = 0\n}\nlocal {\n}\ndevices {\n\tscan_lvs = 1\n\tglobal_filter = [ \"r|a\\\"b|\", \"a|x\\\\y|\" ]\n}\n")
	f, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := f.Bool("devices/scan_lvs"); !ok || !v {
		t.Errorf("devices/scan_lvs = %v, %v; want the last assignment, 1", v, ok)
	}
	if _, ok := f.Bool("devices/use_devicesfile"); ok || f.Sets("devices/use_devicesfile") {
		t.Error("devices/use_devicesfile reported set; only a comment mentions no such key")
	}
	if !f.Sets("devices/global_filter") {
		t.Error("devices/global_filter not reported set")
	}
	var got []string
	for _, a := range f.Assigns {
		if a.Path == "devices/global_filter" {
			for _, v := range a.Values {
				got = append(got, Unescape(v.Text))
			}
		}
	}
	if len(got) != 2 || got[0] != `r|a"b|` || got[1] != `a|x\y|` {
		t.Errorf("global_filter entries %q, want [r|a\"b| a|x\\y|] (\\\" and \\\\ are escapes)", got)
	}
	if _, err := Parse([]byte("devices {\n")); err == nil {
		t.Error("an unclosed section parsed")
	}
}
