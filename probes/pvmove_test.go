package probes

import (
	"strings"
	"testing"
)

func TestIsPoller(t *testing.T) {
	for _, tc := range []struct {
		argv string
		want bool
	}{
		{"pvmove -b -n kvg/adm /dev/sdb /dev/mapper/kslow", true},
		{"/sbin/pvmove /dev/sdb", true},
		{"(lvm2) -b -n kvg/adm /dev/sdb /dev/mapper/kslow", true},
		{"lvm pvmove", true},
		{"/usr/sbin/lvm lvpoll --polloperation pvmove --interval 15 kvg/pvmove0", true},
		{"/usr/sbin/lvm lvpoll --polloperation convert kvg/lv", false},
		{"/usr/sbin/lvmpolld -t 60 -f", false},
		{"lvs -a", false},
		{"bash -c pvmove", false},
		{"", false},
	} {
		if got := isPoller(strings.Fields(tc.argv)); got != tc.want {
			t.Errorf("isPoller(%q) = %v, want %v", tc.argv, got, tc.want)
		}
	}
}
