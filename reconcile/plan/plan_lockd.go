package plan

import (
	"fmt"
	"maps"
	"slices"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/probes/shell"
)

// planLockd judges the VGs shared through lvmlockd (model.VG.Lockd) by
// lvmlockd's state on this host, on every VG the host has, declared or
// not: lvmlockd(8), "Lock start", says a shared VG "must be started before
// [it is] used via vgchange --lockstart VG", and until then "only LVM
// commands that read/display the VG are allowed" ("Starting and stopping
// VGs"): no LV of it activates here, so a guest whose disk it holds
// cannot start or migrate to this node. Without lvmlockd no lockspace
// starts at all. Each is reported on the VG with the command that starts
// it; keel runs neither, as starting a lockspace is the node's boot
// (lvm2's lvmlocks.service runs vgchange --lock-start) and sanlock may
// wait minutes for a host's lease. A host whose lvmlockd state keel could
// not read (Lvmlockd nil or its Error set) is not judged.
func (p *planner) planLockd() {
	l := p.h.Lvmlockd
	if l == nil || l.Error != "" {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(p.h.VGs)) {
		vg := p.h.VGs[name]
		if !vg.Lockd() {
			continue
		}
		start := shell.Join([]string{"vgchange", "--lockstart", name})
		switch {
		case !l.Running:
			p.add(Finding{ID: VGLvmlockdMissing, Object: name,
				Message: fmt.Sprintf("vg %s has lock type %s but lvmlockd is not running: no lockspace can start, so none of its LVs activates here and LVM changes nothing in it",
					name, vg.LockType),
				Expected: "lvmlockd running, lockspace started", Observed: "lvmlockctl: cannot connect to lvmlockd",
				Remedy: lockManagerStart(vg.LockType) + " && " + start,
			})
		case !l.LockStarted(name):
			p.add(Finding{ID: VGLockstartMissing, Object: name,
				Message: fmt.Sprintf("the %s lockspace of shared vg %s is not started on this host: LVM reads it without locks, activates none of its LVs and changes nothing in it",
					vg.LockType, name),
				Expected: "lockspace started", Observed: "not in lvmlockctl --info",
				Remedy: start,
			})
		}
	}
}

// lockManagerStart is the command that starts lvmlockd with the lock
// manager a lock type needs, under the unit names their packages ship:
// lvm2's scripts/lvmlockd.service.in, sanlock's sanlock.service with its
// watchdog daemon wdmd.service ("systemctl start wdmd sanlock", lvmlockd(8)
// "Setup"), and dlm's dlm.service.
func lockManagerStart(lockType string) string {
	if lockType == "dlm" {
		return "systemctl start dlm lvmlockd"
	}
	return "systemctl start wdmd sanlock lvmlockd"
}

// planSharedAutoactivation reports the guest disks of a shared VG that
// lvm2's autoactivation activates at boot. Proxmox VE bug 4997: a disk of
// a shared LVM storage active on several nodes keeps its device-mapper
// device on a node after another node removed it, so a new disk under the
// same name then fails to activate there ("device-mapper: create ioctl ...
// failed: Device or resource busy"), and guest creation or live migration
// fails. pve-storage since 9.0.3 (debian/changelog) creates every LV with --setautoactivation n
// (src/PVE/Storage/LVMPlugin.pm, lvcreate; commit "fix #4997: lvm: create:
// disable autoactivation for new logical volumes"), so that "the storage
// stack will take care of activating/deactivating the LV (only) on the
// correct node"; the disks made before keep autoactivation on. A disk is
// autoactivated when its lv_autoactivation is enabled, its VG's is too
// (vgchange --setautoactivation), and it does not skip activation
// (lv_attr's tenth character k: thin snapshots, lvcreate -s's default).
// The remedy is the node's to run: keel itself changes nothing in a shared
// VG (holdShared).
func (p *planner) planSharedAutoactivation() {
	shared := p.sharedVGs()
	for _, key := range p.sortedLVKeys() {
		lv := p.h.LVs[key]
		s, ok := shared[lv.VG]
		vg := p.h.VGs[lv.VG]
		if !ok || s.Unknown || vg == nil || vg.NoAutoactivation || lv.Hidden || !isVMDiskName(lv.Name) || !autoactivated(lv) {
			continue
		}
		p.add(Finding{ID: LVSharedAutoactivation, Object: lv.FullName,
			Message: fmt.Sprintf("guest disk %s of vg %s, shared between nodes (%s), is autoactivated at boot on every node that sees it (Proxmox VE bug 4997): a node keeps it active after another removed it, and a new disk under its name then fails to activate there",
				lv.FullName, lv.VG, s.Why),
			Expected: "autoactivation n", Observed: "lv_autoactivation enabled",
			Remedy: shell.Join([]string{"lvchange", "--setautoactivation", "n", lv.FullName}),
		})
	}
}

// autoactivated reports whether lvm2's autoactivation (vgchange -aay)
// activates lv as far as the LV itself says: lv_autoactivation enabled (an
// LVM older than 2.03.12 reports no such field, and has no such flag: every
// LV is autoactivated) and no activation skip flag.
func autoactivated(lv *model.LV) bool {
	if aa, ok := lv.Fields.Lookup("lv_autoactivation"); ok && aa != "enabled" {
		return false
	}
	return len(lv.Attr) < 10 || lv.Attr[9] != 'k'
}
