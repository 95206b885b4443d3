package lvm

import (
	"strings"
	"testing"
)

func TestPvmoveArgs(t *testing.T) {
	for _, tc := range []struct {
		argv   string
		ok     bool
		source string
		lv     string
	}{
		// keel's move of a split pool's journal (plan_split.go).
		{"pvmove -n kvg/vsplit_vdata /dev/sdb:1000-1032 /dev/nvme0n1", true, "/dev/sdb", "kvg/vsplit_vdata"},
		{"pvmove --name vsplit_vdata /dev/sdb /dev/nvme0n1", true, "/dev/sdb", "kvg/vsplit_vdata"},
		{"/usr/sbin/lvm pvmove -b -i 5 /dev/sdb", true, "/dev/sdb", ""},
		{"pvmove --alloc anywhere --name=kvg/a /dev/sdc:7", true, "/dev/sdc", "kvg/a"},
		// The poller `pvmove -b` leaves, its argv[0] overwritten.
		{"(lvm2) -b -n kvg/adm /dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd1 /dev/mapper/kslow", true, "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd1", "kvg/adm"},
		{"(lv pvmove -b /dev/sdb", true, "/dev/sdb", ""},
		{"pvmove", false, "", ""},
		{"pvmove -b", false, "", ""},
		{"pvmove --abort /dev/sdb", false, "", ""},
		{"lvremove -y kvg/pvmove0", false, "", ""},
		{"lvm lvpoll --polloperation pvmove kvg/pvmove0", false, "", ""},
	} {
		source, lv, ok := PvmoveArgs(strings.Fields(tc.argv), "kvg")
		if ok != tc.ok || source != tc.source || lv != tc.lv {
			t.Errorf("PvmoveArgs(%q) = %q, %q, %v; want %q, %q, %v", tc.argv, source, lv, ok, tc.source, tc.lv, tc.ok)
		}
	}
	for arg0, want := range map[string]bool{"(lvm2)": true, "(lv": true, "(lvm": true, "(l": false, "pvmove": false, "(lvm2)x": false} {
		if got := Backgrounded(arg0); got != want {
			t.Errorf("Backgrounded(%q) = %v, want %v", arg0, got, want)
		}
	}
}
