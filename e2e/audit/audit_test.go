//go:build e2e

// Package audit proves on a real kernel, in the systemd flavour of the test
// guest, that audit mode changes nothing at any of keel's entry points as
// the .deb ships them (audit.sh).
package audit

import (
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// TestAuditChangesNothing runs audit.sh in one boot: on a host drifted from
// a desired state in audit mode, keel-activate.service, keel.service,
// keel-check.timer with keel-check.service, keel apply, keel activate, keel
// udev-rules --write and keel wipe leave lvm.conf and the udev rules byte
// for byte, the bcache tunables, every VG's metadata seqno and the LVs as
// they were; keel activate still activates what lvm2's autoactivation
// would, and apply and wipe refuse saying why.
func TestAuditChangesNothing(t *testing.T) {
	files := guest.ShareFiles(t, "audit.sh", "audit.cue", "../wipe/wipelib.sh", "../scenarios/stacks.sh")
	files["keel.deb"] = guest.Deb(t)
	r := guest.Run(t, guest.Spec{
		Flavour: guest.Systemd,
		Disks: []guest.Disk{
			{Kind: guest.HDD, Size: "1G", Serial: "hdd1"},
			{Kind: guest.SSD, Size: "512M", Serial: "ssd2"},
			{Kind: guest.HDD, Size: "512M", Serial: "hdd3"},
		},
		Files:   files,
		Script:  string(files["audit.sh"]),
		Timeout: 10 * time.Minute,
	})
	r.LogVerdicts(t, "time: ")
	r.RequireLines(t,
		"ok: keel-activate.service activated auditvg/vm-101-disk-0, as lvm2's autoactivation would",
		"ok: keel-activate.service changed nothing (lvm.conf, udev rules, bcache sysfs, VG seqnos, LVs)",
		"ok: keel.service ran a pass in audit mode",
		"ok: keel.service changed nothing (lvm.conf, udev rules, bcache sysfs, VG seqnos, LVs)",
		"ok: keel-check.timer and keel-check.service changed nothing (lvm.conf, udev rules, bcache sysfs, VG seqnos, LVs)",
		`ok: keel apply in audit mode: exit 1: keel apply: agent.mode is "audit" in the desired state: nothing changed; keel apply --dry-run shows what it would do, agent.mode "converge" lets it`,
		"ok: keel apply changed nothing (lvm.conf, udev rules, bcache sysfs, VG seqnos, LVs)",
		"audit mode: lvm.conf, bcache tunables and udev rules left as they are; only lvm2's vgchange -aay runs",
		"ok: keel activate --timeout 30s changed nothing (lvm.conf, udev rules, bcache sysfs, VG seqnos, LVs)",
		`ok: keel udev-rules --write in audit mode: exit 0: keel udev-rules: agent.mode is "audit": wrote nothing; keel udev-rules --check shows the drift, agent.mode "converge" lets --write install the rules`,
		"ok: keel udev-rules --write changed nothing (lvm.conf, udev rules, bcache sysfs, VG seqnos, LVs)",
		`ok: keel wipe auditvg/data in audit mode: exit 1: keel wipe: agent.mode is "audit" in the desired state: nothing removed; keel wipe --dry-run shows what it would remove, agent.mode "converge" lets it`,
		"ok: keel wipe auditvg/data changed nothing (lvm.conf, udev rules, bcache sysfs, VG seqnos, LVs)",
		`ok: keel wipe --absent in audit mode: exit 1: keel wipe: agent.mode is "audit"`,
		"ok: keel wipe --absent changed nothing (lvm.conf, udev rules, bcache sysfs, VG seqnos, LVs)",
	)
}
