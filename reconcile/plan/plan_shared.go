package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/keel-storage/keel/reconcile/plan/removal"
)

// The gate on shared VGs. A VG several hosts see (removal.SharedVGs:
// lvmlockd's sanlock or dlm lock types, clvm, a Proxmox VE storage with
// shared 1, a VG the desired state declares shared: true) is changed only
// by the node that owns the object. Without lvmlockd, LVM takes no lock
// between hosts: lvmsystemid(7) says a VG visible to several hosts at once
// needs "some mechanism ... to protect it from being used by more than one
// host at a time", so two nodes committing its metadata overwrite each
// other, and an LV changed here may be active there (Proxmox VE activates a
// shared storage's disk only on the node that runs its guest). Under
// lvmlockd, per-VG locks make metadata changes safe from any host, but
// "LV locks limit LV activation to one host at a time" (lvmlockd(8)), so a
// change of an LV active elsewhere fails here, and keel on every node,
// reading the same desired state, would race to make the same change. act
// therefore turns every action on an object of a shared VG into a
// vg.shared_change finding, whatever plan function made it, unless
// sharedSafe says any node may take it: a new kind of action is held by
// default.

// sharedSafe reports whether a may run whatever VG its object belongs to,
// and says why in the list docs/findings.md gives (vg.shared_change):
//
//   - KindNone: a report-only action runs nothing;
//   - KindLVMConf: lvm.conf is this host's own file (/etc/lvm), read by
//     this host's LVM commands only;
//   - KindSysfs: bcache tunables are attributes of this host's kernel
//     (/sys/block/bcacheN/bcache, /sys/fs/bcache), of a cache device that
//     no other host reads;
//   - KindFile whose commands only tell this host's udevd (udevadm): keel's
//     udev rules are this host's files (/etc/udev/rules.d). A KindFile that
//     also runs an LVM command (an autoextend profile written and attached
//     with lvchange --metadataprofile, which commits the VG's metadata) is
//     held like any command.
//
// None of them writes a VG's metadata or loads a device-mapper table.
// Every KindCommand (lvcreate, lvchange, lvextend, vgcreate, pvmove, lvremove,
// dmsetup resume of a suspended LV) and every KindWipe is held.
// Activation is not a planner action: keel activate runs vgchange -aay as
// lvm2's own autoactivation does on every node at boot, and under lvmlockd
// that command takes each LV's lock before it loads a table (lvmlockd(8),
// "LV activation"), so another node holding the LV active makes it fail.
func sharedSafe(a Action) bool {
	switch a.Kind {
	case KindNone, KindLVMConf, KindSysfs:
		return true
	case KindFile:
		for _, c := range a.Commands {
			if len(c) == 0 || c[0] != "udevadm" {
				return false
			}
		}
		return true
	}
	return false
}

// sharedVGs is removal.SharedVGs for the desired state, read once per plan.
func (p *planner) sharedVGs() map[string]removal.SharedVG {
	if p.shared == nil {
		var declared []string
		if p.d != nil {
			declared = p.d.SharedVGs()
		}
		p.shared = removal.SharedVGs(p.h, declared...)
	}
	return p.shared
}

// vgsOf returns the VGs an action's object lies in: "vg", "vg/lv", or a
// comma-separated list of device-mapper names (dm.suspended), each mapped
// to its LV's VG.
func (p *planner) vgsOf(object string) []string {
	var out []string
	for _, part := range strings.Split(object, ",") {
		vg, _, ok := strings.Cut(part, "/")
		if !ok {
			if lv := p.lvByDM[part]; lv != nil {
				vg = lv.VG
			}
		}
		if vg != "" && !slices.Contains(out, vg) {
			out = append(out, vg)
		}
	}
	return out
}

// holdShared reports whether a is held because its object lies in a shared
// VG, after raising (or extending) the object's vg.shared_change finding,
// which names what keel would have done and the commands to run on the
// node that owns it.
func (p *planner) holdShared(a Action) bool {
	if sharedSafe(a) {
		return false
	}
	shared := p.sharedVGs()
	var vg string
	var s removal.SharedVG
	for _, name := range p.vgsOf(a.Object) {
		if sv, ok := shared[name]; ok {
			vg, s = name, sv
			break
		}
	}
	if vg == "" {
		return false
	}
	what := a.Summary
	if len(a.Commands) > 0 {
		what += " (" + shellAnd(a.Commands) + ")"
	}
	remedy := "on the node that owns " + a.Object + ": " + shellAnd(a.Commands)
	switch {
	case s.Unknown:
		// The way forward is to let keel tell: pmxcfs mounts /etc/pve.
		remedy = s.Remedy(vg, "")
	case len(a.Commands) == 0:
		remedy = "on the node that owns " + a.Object + ": " + a.Summary
	}
	for i := range p.findings {
		f := &p.findings[i]
		if f.ID == VGSharedChange && f.Object == a.Object {
			f.Message += "; also " + what
			if !s.Unknown {
				f.Remedy += " && " + strings.TrimPrefix(remedy, "on the node that owns "+a.Object+": ")
			}
			return true
		}
	}
	p.add(Finding{ID: VGSharedChange, Object: a.Object,
		Message: fmt.Sprintf("keel holds a change of %s because vg %s is shared between nodes (%s): another node may hold its LVs active or write its metadata, so the node that owns it makes the change; keel would %s",
			a.Object, vg, s.Why, what),
		Expected: "changed on the node that owns it", Observed: "vg " + vg + " shared: " + s.Why,
		Remedy: remedy,
	})
	return true
}
