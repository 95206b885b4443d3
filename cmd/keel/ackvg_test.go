package main

import (
	"bytes"
	"strings"
	"testing"
)

// keel ack-vg refuses what is not a VG name and an LVM UUID before it
// touches keel's state; the acknowledgement itself is run as printed by
// e2e/ownership/foreignvg.sh in the guest.
func TestAckVGRefusesBadArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "want a VG name and its vg_uuid"},
		{[]string{"vmdata"}, "want a VG name and its vg_uuid"},
		{[]string{"-vmdata", "A7nXA2-Z5fP-3P68-EeDz-oNGT-VS24-5NhiuQ"}, "unknown flag"},
		{[]string{"vm/data", "A7nXA2-Z5fP-3P68-EeDz-oNGT-VS24-5NhiuQ"}, `"vm/data" is not a valid VG name`},
		{[]string{"vmdata", "A7nXA2-Z5fP-3P68"}, `"A7nXA2-Z5fP-3P68" is not an LVM UUID`},
		{[]string{"vmdata", "A7nXA2-Z5fP-3P68-EeDz-oNGT-VS24-5NhiuQ", "x"}, "want a VG name and its vg_uuid"},
	} {
		var out, errb bytes.Buffer
		if code := Main(append([]string{"ack-vg"}, tc.args...), &out, &errb); code != exitError || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("ack-vg %q: exit %d, stderr %q; want %d and %q", tc.args, code, errb.String(), exitError, tc.want)
		}
	}
	if !vgUUIDRE.MatchString("A7nXA2-Z5fP-3P68-EeDz-oNGT-VS24-5NhiuQ") {
		t.Error("a vg_uuid as vgs prints it is refused")
	}
}
