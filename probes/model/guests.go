package model

import "strconv"

// Guests is what the configurations of the host's guests say about block
// devices: every place a Proxmox VE VM or container config, or a libvirt
// domain, names a disk. Removal never takes an LV that one of them names.
type Guests struct {
	// Refs are the disk references, in the order of the files and lines.
	Refs []GuestRef `json:"refs"`
	// Errors name a configuration file or directory that exists but could
	// not be read or parsed: what it references is unknown, so removal
	// treats every LV as possibly referenced.
	Errors []string `json:"errors"`
	// Unknown names what a replayed snapshot did not record (captured
	// before keel read guest configurations): nothing is known of it,
	// which is not the same as a config that could not be read.
	Unknown []string `json:"unknown,omitempty"`
}

// Guest kinds, GuestRef.Kind.
const (
	GuestQemu    = "qemu"    // a Proxmox VE VM (qemu-server)
	GuestLXC     = "lxc"     // a Proxmox VE container (pve-container)
	GuestLibvirt = "libvirt" // a libvirt domain
)

// GuestRef is one disk a guest's configuration names. Exactly one of Volume
// (a Proxmox VE volume ID) and Path (a device path) is set, as written: the
// storage is resolved against storage.cfg by whoever reads the reference,
// so the probe records what the file says and nothing it inferred.
type GuestRef struct {
	// File and Line locate the reference (Line counts from 1).
	File string `json:"file"`
	Line int    `json:"line"`
	// Kind is GuestQemu, GuestLXC or GuestLibvirt.
	Kind string `json:"kind"`
	// Guest is the VMID of a Proxmox VE guest, the domain name of a
	// libvirt domain.
	Guest string `json:"guest"`
	// Key is the config key ("scsi0", "unused0", "rootfs", "mp1",
	// "vmstate") or, for libvirt, the element and attribute ("source dev").
	Key string `json:"key"`
	// Section is the snapshot section the line is in ("" for the current
	// config, "PENDING" for pending changes).
	Section string `json:"section,omitempty"`
	// Volume is a Proxmox VE volume ID "STORAGE:VOLNAME" as written.
	Volume string `json:"volume,omitempty"`
	// Path is a device path as written ("/dev/vg/lv", "/dev/mapper/vg-lv",
	// "/dev/dm-3", "/dev/disk/by-id/dm-name-vg-lv").
	Path string `json:"path,omitempty"`
	// Pool and PoolVolume are a libvirt <source pool= volume=>: a volume of
	// a libvirt storage pool (for a logical pool, an LV of its VG).
	Pool       string `json:"pool,omitempty"`
	PoolVolume string `json:"poolVolume,omitempty"`
	// Target is a libvirt disk's <target dev=> ("vda"), its name in the
	// domain.
	Target string `json:"target,omitempty"`
}

// Where is "file:line".
func (r GuestRef) Where() string { return r.File + ":" + strconv.Itoa(r.Line) }

// What names the guest and the disk for people: "VM 105 unused0
// store:vm-105-disk-0", "CT 200 rootfs ...", "libvirt domain web source dev
// /dev/mapper/vg-lv".
func (r GuestRef) What() string {
	var who string
	switch r.Kind {
	case GuestQemu:
		who = "VM " + r.Guest
	case GuestLXC:
		who = "CT " + r.Guest
	default:
		who = "libvirt domain " + r.Guest
	}
	if r.Section != "" {
		who += " snapshot " + r.Section
	}
	what := r.Volume
	switch {
	case r.Path != "":
		what = r.Path
	case r.Pool != "":
		what = "pool " + r.Pool + " volume " + r.PoolVolume
	}
	return who + " " + r.Key + " " + what
}
