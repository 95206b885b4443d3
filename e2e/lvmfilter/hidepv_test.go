//go:build e2e

package lvmfilter

import (
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// TestHidePV runs hidepv.sh in one boot on a Proxmox-like lvm.conf: a
// desired filter that would hide the PV of a VG in use is refused with
// lvm.conf unchanged byte for byte, a declared reject list keeps
// pve-manager's rejects, and Debian's lvm2 initramfs hook is checked to
// copy /etc/lvm. Set KEEL_HIDEPV_SNAPSHOT_DIR=DIR to keep the node
// snapshot of the Proxmox-like host (reconcile/plan/testdata).
func TestHidePV(t *testing.T) {
	r := guest.Run(t, guest.Spec{
		Disks:   []guest.Disk{{Kind: guest.Virtio, Size: "1G", Serial: "data1"}},
		Keel:    true,
		Files:   guest.ShareFiles(t, "hidepv-hide.cue", "hidepv-keep.cue", "../wipe/wipelib.sh"),
		Script:  string(guest.ShareFiles(t, "hidepv.sh")["hidepv.sh"]),
		Timeout: 15 * time.Minute,
	})
	r.LogVerdicts(t)
	r.KeepCaptures(t, "KEEL_HIDEPV_SNAPSHOT_DIR", "hidepv", "hidepv-pve-stock.txtar")
	r.RequireLines(t,
		"ok: hide: lvm.conf unchanged byte for byte",
		"ok: hide: LVM still sees datavg",
		"ok: hide: keel check reports lvm.filter_hides_pv",
		"ok: keep: global_filter has the declared reject and pve-manager's three",
		"ok: keep: LVM still sees datavg",
		"ok: initramfs: /usr/share/initramfs-tools/hooks/lvm2 copies /etc/lvm",
		"ok: initramfs: keel apply said to run update-initramfs -u",
	)
}
