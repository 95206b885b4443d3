package removal

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/keel-storage/keel/probes/model"
)

// SharedVG says why a VG is shared between hosts. An LV of such a VG that
// is inactive here may be open on another node (Proxmox VE activates a disk
// of a shared LVM storage only on the node that runs its VM; lvmlockd(8)
// lets each host activate an LV exclusively), so keel never activates,
// clears or removes one: that is the owning node's job.
type SharedVG struct {
	// Why names how it is shared: "lvmlockd (lock type sanlock)", "Proxmox
	// storage san has shared 1", ...
	Why string
	// Storage is the Proxmox storage ID that shares it, "" when only LVM
	// or the desired state says so.
	Storage string
	// Unknown is set when keel cannot tell whether the VG is shared: this is
	// a Proxmox VE node whose storage.cfg could not be read. The way
	// forward is then to make it readable, not to remove the LV elsewhere.
	Unknown bool
}

// Remedy is the command that removes vg/lv on the node that owns it, or,
// when keel cannot tell whether vg is shared, the command that shows why
// storage.cfg is missing.
func (s SharedVG) Remedy(vg, lv string) string {
	switch {
	case s.Unknown:
		// pve-cluster.service runs pmxcfs, which mounts /etc/pve.
		return "systemctl status pve-cluster"
	case s.Storage != "":
		// pvesm free removes a volume through the storage layer, which
		// knows the node the disk is active on.
		return fmt.Sprintf("pvesm free %s:%s", s.Storage, lv)
	}
	return fmt.Sprintf("lvremove %s/%s", vg, lv)
}

// WayForward is what to do about an absent vg/lv held because vg is
// shared, in one line: remove it on the owning node and drop the name, or,
// when keel cannot tell, let pve-cluster mount /etc/pve.
func (s SharedVG) WayForward(vg, lv string) string {
	if s.Unknown {
		return "wait for pve-cluster to mount /etc/pve (" + s.Remedy(vg, lv) + "); keel removes " + vg + "/" + lv + " on a later pass if no Proxmox storage shares vg " + vg
	}
	return "on the node that owns it: " + s.Remedy(vg, lv) + "; then drop " + lv + " from the absent list of vg " + vg
}

// SharedVGs finds every VG shared between hosts: lvmlockd and clvmd VGs as
// LVM reports them (vg_shared, vg_clustered, vg_lock_type, vg_attr), the
// VGs the desired state declares shared (declared: a SAN that several
// hosts see without lvmlockd or Proxmox VE), and VGs behind a Proxmox VE
// storage of type lvm or lvmthin whose storage.cfg entry has "shared 1"
// (pve-storage's "vgname" and "shared" options). When storage.cfg exists
// but could not be parsed, or this is a Proxmox VE node whose storage.cfg
// could not be read (pmxcfs has not mounted /etc/pve yet), every VG counts
// as shared: keel cannot tell which ones are.
func SharedVGs(h *model.Host, declared ...string) map[string]SharedVG {
	out := map[string]SharedVG{}
	names := slices.Sorted(maps.Keys(h.VGs))
	for _, name := range names {
		vg := h.VGs[name]
		lock := vg.LockType
		switch {
		case lock != "" && lock != "none":
			out[name] = SharedVG{Why: "lvmlockd (lock type " + lock + ")"}
		case vg.Shared:
			out[name] = SharedVG{Why: "LVM reports it shared or clustered (vg_attr " + vg.Attr + ")"}
		}
	}
	for _, name := range declared {
		if _, ok := out[name]; !ok {
			out[name] = SharedVG{Why: "the desired state declares it shared (shared: true)"}
		}
	}
	if h.Proxmox == nil {
		return out
	}
	if p := h.Proxmox; p.Unreadable != "" {
		for _, name := range names {
			if _, ok := out[name]; !ok {
				out[name] = SharedVG{Unknown: true, Why: "this is a Proxmox VE node (" + p.Node + ") whose storage.cfg could not be read (" + p.Unreadable + "), so keel cannot tell whether a Proxmox storage shares it"}
			}
		}
		return out
	}
	if len(h.Proxmox.Errors) > 0 {
		for _, name := range names {
			if _, ok := out[name]; !ok {
				out[name] = SharedVG{Why: cfgName(h) + " could not be read (" + strings.Join(h.Proxmox.Errors, "; ") + "), so keel cannot tell whether a Proxmox storage shares it"}
			}
		}
		return out
	}
	for _, s := range h.Proxmox.Storages {
		if s.VG == "" || (s.Type != "lvm" && s.Type != "lvmthin") || s.Options["shared"] != "1" {
			continue
		}
		if _, ok := out[s.VG]; !ok {
			out[s.VG] = SharedVG{Why: "Proxmox storage " + s.ID + " has shared 1 in " + cfgName(h), Storage: s.ID}
		}
	}
	return out
}

// cfgName is the storage.cfg the probe read, for a message.
func cfgName(h *model.Host) string {
	if h.PVEStorageCfg == "" {
		return "storage.cfg"
	}
	return h.PVEStorageCfg
}

// refuseShared refuses every destructive action on an LV of a shared VG.
func (o *observed) refuseShared(vg, lv string) error {
	s, ok := o.shared[vg]
	if !ok {
		return nil
	}
	if s.Unknown {
		return fmt.Errorf("%w: vg %s may be shared between nodes: %s; keel never activates, clears or removes an LV it cannot tell is local: %s",
			ErrRefused, vg, s.Why, s.WayForward(vg, lv))
	}
	return fmt.Errorf("%w: vg %s is shared between nodes: %s; keel never activates, clears or removes an LV of a shared VG: remove it on the node that owns it (there: %s), then drop %s from the absent list of vg %s",
		ErrRefused, vg, s.Why, s.Remedy(vg, lv), lv, vg)
}
