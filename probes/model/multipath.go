package model

import (
	"slices"
	"strings"
)

// Multipath is a device-mapper multipath map (a dm device whose table's
// target is "multipath"): one block device over several paths to the same
// storage, as multipathd or dmsetup loaded it. Its path groups and the
// state of each path are the kernel's, from the map's status line (lvm2's
// dmsetup status; the format is drivers/md/dm-mpath.c, multipath_status,
// and multipath-tools reads it the same way, libmultipath/dmparser.c,
// disassemble_status).
type Multipath struct {
	// Name is the dm name: the map is /dev/mapper/<Name>.
	Name string `json:"name"`
	// Device is the map's kernel name ("dm-3"), "" when sysfs did not show it.
	Device string `json:"device"`
	// UUID is the dm UUID; multipathd's maps start "mpath-", the prefix by
	// which LVM knows their paths (lvm2 lib/device/dev-mpath.c).
	UUID string `json:"uuid"`
	// Groups are the priority groups in table order.
	Groups []PathGroup `json:"groups"`
	// Errors lists what could not be read or parsed of the map.
	Errors []string `json:"errors,omitempty"`
}

// PathGroup is one priority group of a multipath map.
type PathGroup struct {
	// State is "A" (the group in use), "E" (enabled, usable) or "D"
	// (disabled: bypassed), as dm-mpath prints it.
	State string          `json:"state"`
	Paths []MultipathPath `json:"paths"`
}

// MultipathPath is one path of a multipath map.
type MultipathPath struct {
	// Dev is the path's device number as the table names it ("8:16").
	Dev string `json:"dev"`
	// Device is the path's kernel name ("sdb"), from the map's slaves in
	// sysfs; "" when no slave has that number.
	Device string `json:"device"`
	// Active is false once dm-mpath failed the path (an I/O error on it,
	// or multipathd's checker, or "dmsetup message MAP 0 fail_path DEV"):
	// no I/O goes down it until it is reinstated.
	Active bool `json:"active"`
	// FailCount counts the times the path was failed.
	FailCount uint64 `json:"failCount"`
}

// Name returns the path's kernel name, or its device number when the
// kernel name is unknown.
func (p MultipathPath) Name() string {
	if p.Device != "" {
		return p.Device
	}
	return p.Dev
}

// Paths returns every path of the map, group after group.
func (m *Multipath) Paths() []MultipathPath {
	var out []MultipathPath
	for _, g := range m.Groups {
		out = append(out, g.Paths...)
	}
	return out
}

// Failed returns the kernel names (or device numbers) of the map's failed
// paths, in table order.
func (m *Multipath) Failed() []string {
	var out []string
	for _, p := range m.Paths() {
		if !p.Active {
			out = append(out, p.Name())
		}
	}
	return out
}

// ActivePaths counts the map's paths that carry I/O.
func (m *Multipath) ActivePaths() int {
	n := 0
	for _, p := range m.Paths() {
		if p.Active {
			n++
		}
	}
	return n
}

// MultipathOf returns the multipath map that has the block device dev
// (a kernel name, "sdb") as one of its paths, or a partition of one of its
// paths ("sdb1", "nvme0n1p1": LVM judges a partition by its whole disk,
// lvm2 lib/device/dev-mpath.c), or nil.
func (h *Host) MultipathOf(dev string) *Multipath {
	if dev == "" {
		return nil
	}
	for _, m := range h.Multipath {
		var paths []string
		if q := h.Queues[m.Device]; q != nil {
			paths = append(paths, q.Slaves...)
		}
		for _, p := range m.Paths() {
			paths = append(paths, p.Device)
		}
		if slices.ContainsFunc(paths, func(p string) bool { return p != "" && (p == dev || isPartitionOf(dev, p)) }) {
			return m
		}
	}
	return nil
}

// isPartitionOf reports whether kernel name part names a partition of the
// whole disk disk: the disk's name followed by the partition number, with
// a "p" between when the disk's name ends in a digit ("nvme0n1p1"), as the
// kernel names them (block/partitions/core.c, add_partition).
func isPartitionOf(part, disk string) bool {
	rest, ok := strings.CutPrefix(part, disk)
	if !ok || rest == "" {
		return false
	}
	if c := disk[len(disk)-1]; c >= '0' && c <= '9' {
		if rest, ok = strings.CutPrefix(rest, "p"); !ok || rest == "" {
			return false
		}
	}
	return strings.Trim(rest, "0123456789") == ""
}

// MultipathByDevice returns the multipath map whose kernel name is dev
// ("dm-3"), or nil.
func (h *Host) MultipathByDevice(dev string) *Multipath {
	for _, m := range h.Multipath {
		if dev != "" && m.Device == dev {
			return m
		}
	}
	return nil
}

// IsMultipathUUID reports whether a dm UUID is one multipathd gives its
// maps ("mpath-<wwid>"): LVM hides the paths of such a map
// (devices/multipath_component_detection, lvm2 lib/device/dev-mpath.c).
func IsMultipathUUID(uuid string) bool { return strings.HasPrefix(uuid, "mpath-") }
