//go:build e2e

package lvmfilter

import (
	"os"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// TestLVMConfCascade runs cascade.sh in one boot: keel writes a symlinked
// lvm.conf through the link keeping owner and mode;
// a setting lvmlocal.conf overrides is written where it takes effect and
// not acted on again, one a tag file overrides is reported and not
// written; with the devices file in force and stale, the declared PV it
// misses and the entry matching no PV are reported.
//
// Set KEEL_DEVFILE_SNAPSHOT_DIR=DIR to keep the node snapshots taken with
// lvmlocal.conf and a tag file overriding lvm.conf and with the stale
// devices file in force, and the system.devices this boot made (the
// host-side fixtures of reconcile/plan's tests).
func TestLVMConfCascade(t *testing.T) {
	lib, err := os.ReadFile("../wipe/wipelib.sh")
	if err != nil {
		t.Fatal(err)
	}
	files := guest.ShareFiles(t, "cascade.sh", "scan.cue", "devfile.cue", "devfile-on.cue")
	files["wipelib.sh"] = lib
	r := guest.Run(t, guest.Spec{
		Disks: []guest.Disk{
			{Kind: guest.NVMe, Size: "1G", Serial: "nvme0"},
			{Kind: guest.HDD, Size: "1G", Serial: "hdd1"},
		},
		Keel:    true,
		Files:   files,
		Script:  string(files["cascade.sh"]),
		Timeout: 10 * time.Minute,
	})
	r.LogVerdicts(t)
	r.KeepCaptures(t, "KEEL_DEVFILE_SNAPSHOT_DIR", "cascade", "node-devfile-on.txtar", "node-local.txtar", "node-tag.txtar", "system.devices")
	r.RequireLines(t,
		"ok: lvm.conf is still a symlink to /etc/lvm-managed/lvm.conf",
		"ok: the target holds scan_lvs = 1, in force",
		"ok: owner and mode kept (root:disk 0640)",
		"ok: scan_lvs = 1 in force: keel wrote where the setting takes effect",
		"ok: the second apply ran no lvm.conf action and wrote nothing",
		"ok: a tag file sets scan_lvs: keel reports lvm.conf_overridden and writes nothing",
		"ok: lvm2 set the stale system.devices aside: turning the devices file on hid nothing",
		"ok: with the devices file in force LVM hides hostvg",
		"ok: with the devices file in force keel check names hostvg's PV it does not list",
		"ok: keel check reports the entry that matches no PV (lvm.devices_file_stale)",
	)
}
