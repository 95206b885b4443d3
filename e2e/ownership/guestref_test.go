//go:build e2e

package ownership_test

import (
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// TestWipeGuestRef runs guestref.sh in one boot: absent LVs that a Proxmox
// VE VM config (an unused disk, a disk of a snapshot section, on another
// node through /etc/pve/nodes) or a libvirt domain (by /dev/mapper path)
// names are kept with their data, keel check names the file and line of
// each reference, keel wipe by name refuses, and the absent LV nothing names
// is removed.
func TestWipeGuestRef(t *testing.T) {
	files := shareFiles(t, "guestref.cue", "guestref.sh")
	r := guest.Run(t, guest.Spec{
		Disks:   []guest.Disk{{Kind: guest.HDD, Size: "1G", Serial: "hdd1"}},
		Keel:    true,
		Files:   files,
		Script:  string(files["guestref.sh"]),
		Timeout: 10 * time.Minute,
	})
	r.LogVerdicts(t)
	// The setup capture (fake /etc/pve and /etc/libvirt trees) for the
	// guest reference tests of reconcile/plan and reconcile/plan/removal.
	r.KeepCaptures(t, "KEEL_WIPE_SNAPSHOT_DIR", "guestref", "node-guestref.txtar")
	// The scenario exits with its number of failures; each must-pass step
	// prints an "ok:" line, so a scenario that stopped early cannot pass.
	r.RequireOK(t)
	for _, want := range []string{
		"ok: keel check: lv.absent_referenced guest-vg/vm-105-disk-0 names /etc/pve/nodes/othernode/qemu-server/105.conf:7",
		"ok: keel check: lv.absent_referenced guest-vg/vm-105-disk-1 names /etc/pve/nodes/othernode/qemu-server/105.conf:13",
		"ok: keel check: lv.absent_referenced guest-vg/kvm-web-disk names /etc/libvirt/qemu/web.xml:7",
		"ok: keel wipe guest-vg/vm-105-disk-0 refused naming 105.conf:7, nothing changed",
		"ok: keel apply kept guest-vg/vm-105-disk-0, checksum intact",
		"ok: keel apply kept guest-vg/vm-105-disk-1, checksum intact",
		"ok: keel apply kept guest-vg/kvm-web-disk, checksum intact",
		"ok: keel apply removed guest-vg/vm-107-disk-0, which nothing names",
	} {
		if !strings.Contains(r.Output, want) {
			t.Errorf("scenario output lacks %q", want)
		}
	}
}
