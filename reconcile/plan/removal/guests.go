package removal

import (
	"fmt"
	"path"
	"strings"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/probes/model"
)

// GuestUse is what the guests' configurations say about one LV: the lines
// that name it, and the configurations that could not be read (any of
// them may name it).
type GuestUse struct {
	Refs       []model.GuestRef
	Unreadable []string
}

// Any reports whether the LV must be kept for a guest.
func (u GuestUse) Any() bool { return len(u.Refs) > 0 || len(u.Unreadable) > 0 }

// Where is "file:line (what)" for every reference, then every unreadable
// configuration, joined by "; ".
func (u GuestUse) Where() string {
	var parts []string
	for _, r := range u.Refs {
		parts = append(parts, r.Where()+" ("+r.What()+")")
	}
	for _, e := range u.Unreadable {
		parts = append(parts, "unreadable: "+e)
	}
	return strings.Join(parts, "; ")
}

// Places is "file:line" of every reference, then every unreadable
// configuration, joined by ", ".
func (u GuestUse) Places() string {
	var parts []string
	for _, r := range u.Refs {
		parts = append(parts, r.Where())
	}
	return strings.Join(append(parts, u.Unreadable...), ", ")
}

// Remedy is one line: how to take the LV out of each guest that names it,
// or keep it by dropping lv from the absent list of vg.
func (u GuestUse) Remedy(vg, lv string) string {
	var steps []string
	seen := map[string]bool{}
	for _, r := range u.Refs {
		if s := detach(r); !seen[s] {
			seen[s] = true
			steps = append(steps, s)
		}
	}
	if len(u.Unreadable) > 0 {
		steps = append(steps, "make the unreadable guest configurations readable")
	}
	return strings.Join(steps, "; ") + "; or keep it: drop " + lv + " from the absent list of vg " + vg
}

// detach is the command that takes the disk of r out of its guest, with the
// node to run it on when the config belongs to another node. Proxmox VE:
// `qm disk unlink --idlist unusedN` (qm(1): "unlink of unused[n] always
// causes physical removal") and `pct set --delete unusedN` remove the volume
// through its storage; an attached disk is unlinked first (qm with --force 1
// removes it at once; pct turns a mount point into an unused entry); a
// disk only a snapshot names goes with the snapshot (qm/pct delsnapshot).
// libvirt: `virsh detach-disk --persistent` removes the disk from the
// domain's definition and, when it runs, from the running domain.
func detach(r model.GuestRef) string {
	on := ""
	if rest, ok := strings.CutPrefix(r.File, "/etc/pve/nodes/"); ok {
		if node, _, ok := strings.Cut(rest, "/"); ok {
			on = "on node " + node + ": "
		}
	}
	tool := "qm"
	if r.Kind == model.GuestLXC {
		tool = "pct"
	}
	switch {
	case r.Kind == model.GuestLibvirt && r.Target != "":
		return "virsh detach-disk " + r.Guest + " " + r.Target + " --persistent"
	case r.Kind == model.GuestLibvirt:
		return "virsh edit " + r.Guest + " and remove the disk"
	case r.Section == "PENDING":
		return on + tool + " set " + r.Guest + " --revert " + r.Key
	case r.Section != "" && r.Section != "special:cloudinit":
		return on + tool + " delsnapshot " + r.Guest + " " + r.Section
	case r.Kind == model.GuestQemu && strings.HasPrefix(r.Key, "unused"):
		return on + "qm disk unlink " + r.Guest + " --idlist " + r.Key
	case r.Kind == model.GuestQemu:
		return on + "qm disk unlink " + r.Guest + " --idlist " + r.Key + " --force 1"
	default:
		return on + "pct set " + r.Guest + " --delete " + r.Key
	}
}

// GuestUses finds what the guests' configurations say about the LV vg/name
// (observed as vg/name, or as vg/del-name while keel wipes it: a config
// written before the rename still names the original). A reference names
// the LV when:
//
//   - a Proxmox VE volume ID STORAGE:VOLNAME has a storage of type lvm or
//     lvmthin in storage.cfg whose vgname is vg, and VOLNAME is the LV's
//     name (pve-storage's LVMPlugin and LvmThinPlugin: the volume name is
//     the LV name; a linked clone "base-100-disk-0/vm-105-disk-0" names both
//     LVs, and a disk in snapshot section S of a thin storage also names
//     LvmThinPlugin's snapshot LV "snap_VOLNAME_S", or for a qcow2 volume
//     chain LVMPlugin's "snap_VOLNAME-without-.qcow2_S.qcow2"). A storage that
//     storage.cfg does not define (or a storage.cfg keel cannot read) may
//     be an LVM storage on any VG: the name then matches in every VG. A
//     storage of another type (dir, zfspool, rbd, ...) holds no LV.
//   - a device path is /dev/VG/LV, /dev/mapper/<dm name> or
//     /dev/disk/by-id/dm-name-<dm name> (LVM's dm name doubles the dashes,
//     lvm.Name.DMName), /dev/disk/by-id/dm-uuid-LVM-<vg uuid><lv uuid>, or
//     any path this probe resolved to the LV's active device (/dev/dm-N).
//   - a libvirt volume disk names the LV's name in any pool: keel does not
//     read libvirt's pool definitions, so any VG may be the pool's.
//
// Every configuration that exists but could not be read or parsed is
// returned as unreadable: it may name any LV. What a replayed snapshot did
// not record (Guests.Unknown) is not: such a snapshot was captured before
// keel read guest configurations, and no removal runs on a replay.
func GuestUses(h *model.Host, vg, name string) GuestUse {
	var u GuestUse
	if h.Guests == nil {
		return u
	}
	u.Unreadable = h.Guests.Errors
	lv := h.LVs[vg+"/"+name]
	if lv == nil {
		lv = h.LVs[vg+"/"+DelPrefix+name]
	}
	names := []string{name, DelPrefix + name}
	for _, r := range h.Guests.Refs {
		if refNames(h, r, vg, names, lv) {
			u.Refs = append(u.Refs, r)
		}
	}
	return u
}

// refNames reports whether r names the LV vg/n for an n of names (lv is
// that LV as observed, nil when it is not).
func refNames(h *model.Host, r model.GuestRef, vg string, names []string, lv *model.LV) bool {
	is := func(n string) bool {
		for _, x := range names {
			if x == n {
				return true
			}
		}
		return false
	}
	switch {
	case r.Volume != "":
		storage, volname, _ := strings.Cut(r.Volume, ":")
		inVG, holds := storageVG(h, storage)
		if !holds || (inVG != "" && inVG != vg) {
			return false
		}
		for _, part := range strings.Split(volname, "/") {
			if is(part) || (r.Section != "" && is(snapshotLVName(part, r.Section))) {
				return true
			}
		}
		return false
	case r.Pool != "":
		return is(r.PoolVolume)
	case r.Path != "":
		return pathNames(h, path.Clean(r.Path), vg, names, lv)
	}
	return false
}

// storageVG resolves a Proxmox VE storage ID through storage.cfg: the VG of
// an lvm or lvmthin storage ("" when it has no vgname), and whether the
// storage may hold LVs at all (an unknown storage may).
func storageVG(h *model.Host, id string) (vg string, holdsLVs bool) {
	if h.Proxmox == nil || len(h.Proxmox.Errors) > 0 {
		return "", true
	}
	for _, s := range h.Proxmox.Storages {
		if s.ID == id {
			return s.VG, s.Type == "lvm" || s.Type == "lvmthin"
		}
	}
	return "", true
}

// snapshotLVName is the LV pve-storage makes for the snapshot snap of the
// volume vol: LvmThinPlugin's "snap_${volname}_$snap", and for a qcow2
// volume of a volume chain LVMPlugin's get_snap_name, which drops the
// extension and puts it back after the snapshot ("snap_vm-105-disk-0_S.qcow2",
// chain.go).
func snapshotLVName(vol, snap string) string {
	if base, ok := strings.CutSuffix(vol, ".qcow2"); ok {
		return "snap_" + base + "_" + snap + ".qcow2"
	}
	return "snap_" + vol + "_" + snap
}

// pathNames reports whether the device path p names vg/n for an n of names.
func pathNames(h *model.Host, p, vg string, names []string, lv *model.LV) bool {
	var dmNames []string
	for _, n := range names {
		dmNames = append(dmNames, lvm.Name{VG: vg, LV: n}.DMName())
	}
	if lv != nil && lv.DMName != "" {
		dmNames = append(dmNames, lv.DMName)
	}
	isDM := func(s string) bool {
		for _, d := range dmNames {
			if d == s {
				return true
			}
		}
		return false
	}
	if m, ok := strings.CutPrefix(p, "/dev/mapper/"); ok && isDM(m) {
		return true
	}
	if m, ok := strings.CutPrefix(p, "/dev/disk/by-id/dm-name-"); ok && isDM(m) {
		return true
	}
	if u, ok := strings.CutPrefix(p, "/dev/disk/by-id/dm-uuid-LVM-"); ok && lv != nil && lv.UUID != "" {
		// LVM's dm uuid: "LVM-" + the VG's uuid + the LV's, without dashes
		// (lvm2 lib/activate/dev_manager.c, build_dm_uuid).
		id := strings.ReplaceAll(lv.UUID, "-", "")
		if len(u) >= 64 && u[32:64] == id {
			return true
		}
	}
	if rest, ok := strings.CutPrefix(p, "/dev/"); ok {
		if v, n, ok := strings.Cut(rest, "/"); ok && v == vg && !strings.Contains(n, "/") {
			for _, x := range names {
				if n == x {
					return true
				}
			}
		}
	}
	// An active device by any other name (/dev/dm-3, a by-id link) as this
	// pass saw the devices.
	if k := h.Device(p); k != "" {
		if q := h.Queues[k]; q != nil && q.DMName != "" && isDM(q.DMName) {
			return true
		}
	}
	return false
}

// refuseGuests refuses the removal of vg/name while a guest's configuration
// names it.
func (o *observed) refuseGuests(vg, name string) error {
	u := GuestUses(o.Host, vg, name)
	if !u.Any() {
		return nil
	}
	return fmt.Errorf("%w: a guest's configuration names it: %s; keel never removes a disk a guest names: %s",
		ErrRefused, u.Where(), u.Remedy(vg, name))
}
