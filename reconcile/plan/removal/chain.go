package removal

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/keel-storage/keel/probes/model"
)

// Proxmox VE 9's volume chains. A storage of type lvm with
// snapshot-as-volume-chain keeps each VM disk as a chain of qcow2 images,
// one per LV (pve-storage 9.x, src/PVE/Storage/LVMPlugin.pm):
//
//   - the current volume is the LV named by the volume, "vm-105-disk-0.qcow2"
//     (parse_volname: a volume ending in .qcow2 is qcow2);
//   - a snapshot S of it is the LV "snap_vm-105-disk-0_S.qcow2" (get_snap_name
//     drops the volume's extension); volume_snapshot renames the current
//     volume to it and allocates a new current volume whose qcow2 header
//     names it as its backing file, so the current volume reads through
//     every snapshot below it;
//   - free_image frees the current volume and every snapshot LV together
//     (volume_snapshot_info, then free_lvm_volumes_locked), and
//     volume_snapshot_delete merges a snapshot into its child before its LV
//     goes.
//
// So removing a snapshot LV alone leaves the current volume with a backing
// file that is gone (the guest's disk no longer reads), and removing the
// current volume alone leaves its snapshots behind with no volume to
// belong to. keel removes a chain whole or not at all: every LV of it
// declared absent (or named on keel wipe's command line), else refused.
// Chains are found by these names, as volume_snapshot_info finds a
// snapshot by parse_snap_name; keel does not read the qcow2 headers.

// chainVolumeRE matches the current volume of a chain: a Proxmox VE VM
// disk name (parse_volname's vm-VMID-...) in qcow2 format.
var chainVolumeRE = regexp.MustCompile(`^vm-([0-9]+)-\S+\.qcow2$`)

// Chain is a qcow2 volume chain that holds the removal of one of its LVs.
type Chain struct {
	// VG is the chain's VG, Volume its current volume's LV name
	// ("vm-105-disk-0.qcow2") and VMID the guest's id ("105").
	VG, Volume, VMID string
	// Snapshot is the snapshot the LV to remove holds ("s1"), "" when it
	// is the current volume.
	Snapshot string
	// Left are the chain's LVs the removal would leave behind, sorted.
	Left []string
	// Storage is the Proxmox VE storage of type lvm on VG ("" when
	// storage.cfg names none).
	Storage string
}

// ChainOf returns the volume chain that holds the removal of vg/name, nil
// when name is in no chain or when every other LV of its chain is covered
// (declared absent, or removed along with it).
func ChainOf(h *model.Host, vg, name string, covered func(lv string) bool) *Chain {
	c := chainOf(h, vg, name)
	if c == nil {
		return nil
	}
	members := append([]string{c.Volume}, chainSnapshots(h, vg, c.Volume)...)
	for _, m := range members {
		if m != name && !covered(m) {
			c.Left = append(c.Left, m)
		}
	}
	if len(c.Left) == 0 {
		return nil
	}
	sort.Strings(c.Left)
	if h.Proxmox != nil {
		for _, s := range h.Proxmox.Storages {
			if s.Type == "lvm" && s.VG == vg {
				c.Storage = s.ID
				break
			}
		}
	}
	return c
}

// chainOf finds the chain name belongs to: name is its current volume, or
// one of its snapshots while the current volume exists (the snapshots
// of a volume already removed are no longer a chain anyone reads).
func chainOf(h *model.Host, vg, name string) *Chain {
	if m := chainVolumeRE.FindStringSubmatch(name); m != nil {
		return &Chain{VG: vg, Volume: name, VMID: m[1]}
	}
	rest, ok := strings.CutPrefix(name, "snap_")
	if !ok || !strings.HasSuffix(name, ".qcow2") {
		return nil
	}
	// The volume's name holds no "_" in what Proxmox VE allocates
	// (vm-VMID-disk-N), but a snapshot's name may: try every split, the
	// longest volume first, against the LVs that exist.
	for i := strings.LastIndex(rest, "_"); i > 0; i = strings.LastIndex(rest[:i], "_") {
		volume := rest[:i] + ".qcow2"
		m := chainVolumeRE.FindStringSubmatch(volume)
		if m == nil || h.LVs[vg+"/"+volume] == nil {
			continue
		}
		return &Chain{VG: vg, Volume: volume, VMID: m[1], Snapshot: strings.TrimSuffix(rest[i+1:], ".qcow2")}
	}
	return nil
}

// chainSnapshots returns the LV names of the snapshots of the chain whose
// current volume is vg/volume, sorted.
func chainSnapshots(h *model.Host, vg, volume string) []string {
	prefix := "snap_" + strings.TrimSuffix(volume, ".qcow2") + "_" // get_snap_name
	var out []string
	for _, lv := range h.LVs {
		if lv.VG == vg && strings.HasPrefix(lv.Name, prefix) && strings.HasSuffix(lv.Name, ".qcow2") && len(lv.Name) > len(prefix)+len(".qcow2") {
			out = append(out, lv.Name)
		}
	}
	sort.Strings(out)
	return out
}

// Why says why the removal is held, in one line.
func (c *Chain) Why() string {
	if c.Snapshot != "" {
		return fmt.Sprintf("is snapshot %s of the Proxmox VE volume chain of %s/%s (snapshot-as-volume-chain): the current volume reads through it, and removing it alone breaks the disk; left: %s",
			c.Snapshot, c.VG, c.Volume, strings.Join(c.Left, ", "))
	}
	return fmt.Sprintf("is the current volume of a Proxmox VE volume chain (snapshot-as-volume-chain) whose snapshot LVs would be left behind: %s",
		strings.Join(c.Left, ", "))
}

// Remedy is the way forward: the Proxmox VE command that changes the
// chain as pve-storage does, or every LV of it declared absent. The
// current volume's remedy names no guest: a volume a guest names is held
// by refuseGuests before this rule, so pvesm free applies as it is.
func (c *Chain) Remedy() string {
	all := []string{c.Volume}
	for _, n := range c.Left {
		if n != c.Volume {
			all = append(all, n)
		}
	}
	if c.Snapshot != "" {
		all = append(all, snapshotLVName(c.Volume, c.Snapshot))
	}
	sort.Strings(all[1:])
	whole := "declare the whole chain absent in vg " + c.VG + ": " + quoteNames(all)
	if c.Snapshot != "" {
		return "qm delsnapshot " + c.VMID + " " + c.Snapshot + " (merges the snapshot and removes its LV), or " + whole
	}
	if c.Storage == "" {
		return whole
	}
	return whole + ", or free it in Proxmox VE, which frees the whole chain: pvesm free " + c.Storage + ":" + c.Volume
}

// quoteNames renders names as a CUE list.
func quoteNames(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
