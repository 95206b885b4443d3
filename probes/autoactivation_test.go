package probes

import (
	"slices"
	"strings"
	"testing"
)

// lvm2's own event autoactivation is told from keel's and the admin's
// vgchange, and its VG read from the command line.
func TestAutoactivatedVG(t *testing.T) {
	for _, c := range []struct {
		argv string
		vg   string
		ok   bool
	}{
		{"/usr/sbin/lvm vgchange -aay --autoactivation event vdovg", "vdovg", true}, // lvm-activate-vdovg.service
		{"lvm vgchange -aay --autoactivation=event pve", "pve", true},
		{"vgchange -a ay --autoactivation event vdosplit", "vdosplit", true},
		{"vgchange --autoactivation event -aay", "", true},
		{"vgchange -aay --autoactivation event a b", "", true},
		{"vgchange -aay vdovg", "", false}, // keel's own, or an admin's
		{"lvm vgchange -aay --autoactivation service vdovg", "", false},
		{"lvm pvscan --cache --listvg --checkcomplete /dev/sdb", "", false},
		{"", "", false},
	} {
		vg, ok := autoactivatedVG(strings.Fields(c.argv))
		if vg != c.vg || ok != c.ok {
			t.Errorf("%q: %q, %v; want %q, %v", c.argv, vg, ok, c.vg, c.ok)
		}
	}
}

// Autoactivations reads /proc through the probe's file root.
func TestAutoactivations(t *testing.T) {
	f := procFS{
		"412": "/usr/sbin/lvm\x00vgchange\x00-aay\x00--autoactivation\x00event\x00vdovg\x00",
		"413": "vgchange\x00-aay\x00vdosplit\x00",
		"2":   "", // a kernel thread
	}
	acts, err := Autoactivations(f)
	if err != nil || !slices.Equal(acts, []Autoactivation{{PID: 412, VG: "vdovg"}}) {
		t.Errorf("Autoactivations = %v, %v; want [{412 vdovg}]", acts, err)
	}
}
