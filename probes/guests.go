package probes

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
)

// Where guests' configurations live.
//
// Proxmox VE: pmxcfs shows every node's VM and container configs under
// /etc/pve/nodes/<node>/qemu-server and /etc/pve/nodes/<node>/lxc, and links
// /etc/pve/qemu-server and /etc/pve/lxc to the local node's directories
// (pve-cluster's pmxcfs, cfs-plug-link.c: the "qemu-server" and "lxc" links
// to "nodes/<nodename>/..."). Reading the nodes directory sees the VMs of the
// whole cluster: a VM of another node may own a disk on a VG this node sees.
//
// libvirt: /etc/libvirt/qemu/<domain>.xml holds the persistent definitions,
// /run/libvirt/qemu/<domain>.xml the live state of running domains (a
// <domstatus> around the <domain>), which can name a disk a transient domain
// or a hot-plugged disk added without --config.
const (
	pveRoot        = "/etc/pve"
	pveNodes       = "/etc/pve/nodes"
	libvirtEtcQemu = "/etc/libvirt/qemu"
	libvirtRunQemu = "/run/libvirt/qemu"
)

// pveGuestDirs are the config directories of a node, with their guest kind.
var pveGuestDirs = []struct{ dir, kind string }{
	{"qemu-server", model.GuestQemu},
	{"lxc", model.GuestLXC},
}

// probeGuests reads every guest configuration the host has and records the
// disks they name. A directory that does not exist is skipped; one that
// cannot be read is an error of Guests, which removal treats as "any LV may
// be referenced".
func probeGuests(fsys hostio.FS, h *model.Host) {
	g := &model.Guests{}
	seen := false
	note := func(p string, err error) {
		seen = true
		if errors.Is(err, hostio.ErrNotRecorded) {
			g.Unknown = append(g.Unknown, p)
			return
		}
		g.Errors = append(g.Errors, fmt.Sprintf("%s: %v", p, err))
	}
	// readDir lists dir; ok is false when it does not exist or failed (noted).
	readDir := func(dir string) ([]string, bool) {
		names, err := fsys.ReadDir(dir)
		if err != nil {
			if !isNotExist(err) {
				note(dir, err)
			}
			return nil, false
		}
		seen = true
		return names, true
	}
	readConf := func(file, kind, guest string, parse func([]byte, string, string, string) ([]model.GuestRef, error)) {
		b, err := fsys.ReadFile(file)
		if err != nil {
			if !isNotExist(err) { // removed between the listing and the read: gone
				note(file, err)
			}
			return
		}
		refs, err := parse(b, file, kind, guest)
		if err != nil {
			note(file, err)
		}
		g.Refs = append(g.Refs, refs...)
	}

	// Proxmox VE: every node's directories, then the local links unless
	// they lead to a directory already read (on a real node they always
	// do; without pmxcfs, as in a test guest, they may be plain directories).
	read := map[string]bool{}
	readPVEDir := func(dir, kind string) {
		names, ok := readDir(dir)
		if !ok {
			return
		}
		read[dir] = true
		for _, n := range names {
			if id, ok := strings.CutSuffix(n, ".conf"); ok && isVMID(id) {
				readConf(dir+"/"+n, kind, id, parsePVEConfig)
			}
		}
	}
	if nodes, ok := readDir(pveNodes); ok {
		for _, node := range nodes {
			for _, d := range pveGuestDirs {
				readPVEDir(pveNodes+"/"+node+"/"+d.dir, d.kind)
			}
		}
	}
	for _, d := range pveGuestDirs {
		dir := pveRoot + "/" + d.dir
		if t, err := fsys.Readlink(dir); err == nil {
			if !path.IsAbs(t) {
				t = path.Join(pveRoot, t)
			}
			if read[path.Clean(t)] {
				continue
			}
		}
		readPVEDir(dir, d.kind)
	}

	for _, dir := range []string{libvirtEtcQemu, libvirtRunQemu} {
		names, ok := readDir(dir)
		if !ok {
			continue
		}
		for _, n := range names {
			if strings.HasSuffix(n, ".xml") {
				readConf(dir+"/"+n, model.GuestLibvirt, strings.TrimSuffix(n, ".xml"), parseLibvirtDomain)
			}
		}
	}
	if seen {
		h.Guests = g
	}
}

// isVMID reports whether s is a Proxmox VE VMID (pve-common's
// PVE::JSONSchema pve-vmid: 100 to 999999999; lower ids are reserved, but a
// config named so is read all the same).
func isVMID(s string) bool {
	return s != "" && len(s) <= 9 && strings.Trim(s, "0123456789") == ""
}

// Proxmox VE config syntax, after qemu-server's PVE::QemuServer
// parse_vm_config and pve-container's PVE::LXC::Config parse_pct_config:
// "key: value" lines, "#" comment lines (the description), and sections
// "[snapname]" for snapshots, "[PENDING]" for pending changes and
// "[special:cloudinit]". A snapshot section's disks are references too: the
// snapshot's config can name a disk the current config no longer does, and
// a rollback brings it back.
var (
	pveSectionRE = regexp.MustCompile(`^\[([a-zA-Z0-9_:\-]+)\]\s*$`)
	pveKeyRE     = regexp.MustCompile(`^([a-z][a-z_\-]*\d*):\s*(.*?)\s*$`)
	// The keys whose value is a disk. qemu-server's PVE::QemuServer::Drive:
	// ide0-3, sata0-5, scsi0-30, virtio0-15, efidisk0, tpmstate0, unused0-255
	// ($MAX_*_DISKS), and a snapshot's vmstate (the saved RAM, a volume of
	// its own); pve-container's PVE::LXC::Config: rootfs, mp0-255 and
	// unused0-255 ($MAX_MOUNT_POINTS). Numbers beyond the limits are read
	// too: a hand-edited config is still what the guest would use.
	qemuDiskKeyRE = regexp.MustCompile(`^(?:(?:ide|sata|scsi|virtio|unused)\d+|efidisk0|tpmstate0|vmstate)$`)
	lxcDiskKeyRE  = regexp.MustCompile(`^(?:rootfs|mp\d+|unused\d+)$`)
	// pveVolumeIDRE is PVE::Storage::parse_volume_id's: a storage ID
	// (pve-storage-id: a letter, then letters, digits, "-", "_", "."; ends
	// in a letter or digit), a colon, the volume name.
	pveVolumeIDRE = regexp.MustCompile(`^(?i)([a-z][a-z0-9\-_.]*[a-z0-9]):(.+)$`)
)

// parsePVEConfig returns the disks a VM or container config names.
func parsePVEConfig(b []byte, file, kind, vmid string) ([]model.GuestRef, error) {
	keys := qemuDiskKeyRE
	if kind == model.GuestLXC {
		keys = lxcDiskKeyRE
	}
	var refs []model.GuestRef
	section := ""
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if m := pveSectionRE.FindStringSubmatch(line); m != nil {
			section = m[1]
			continue
		}
		m := pveKeyRE.FindStringSubmatch(line)
		if m == nil || !keys.MatchString(m[1]) {
			continue // lxc.* raw keys, unknown lines: PVE ignores or warns
		}
		vol := pveDiskVolume(m[2], kind)
		r := model.GuestRef{File: file, Line: n + 1, Kind: kind, Guest: vmid, Key: m[1], Section: section}
		switch {
		case vol == "" || vol == "none" || vol == "cdrom":
			continue // an empty CD-ROM drive
		case strings.HasPrefix(vol, "/"):
			r.Path = vol // a device or file given by path (root only)
		case pveVolumeIDRE.MatchString(vol):
			r.Volume = vol
		default:
			continue
		}
		refs = append(refs, r)
	}
	return refs, nil
}

// pveDiskVolume is the volume of a disk value: a property string whose
// default key (the first item without "=") is the volume, also given as
// file= (qemu-server's drive format) or volume= (pve-container's mount
// points).
func pveDiskVolume(v, kind string) string {
	key := "file"
	if kind == model.GuestLXC {
		key = "volume"
	}
	for i, part := range strings.Split(v, ",") {
		k, val, hasEq := strings.Cut(part, "=")
		switch {
		case !hasEq && i == 0:
			return strings.TrimSpace(part)
		case hasEq && strings.TrimSpace(k) == key:
			return strings.TrimSpace(val)
		}
	}
	return ""
}

// parseLibvirtDomain returns the block devices a libvirt domain XML names
// in its disks (libvirt's formatdomain "Hard drives, floppy disks,
// CDROMs"): <source dev=> of a block disk, <source file=> when it is a
// device path, <source pool= volume=> of a volume disk, and the same in a
// <backingStore> chain. The line is that of the <source> element; a
// reference also names the disk's <target dev=>, which may follow it.
func parseLibvirtDomain(b []byte, file, _, guest string) ([]model.GuestRef, error) {
	d := xml.NewDecoder(bytes.NewReader(b))
	var (
		refs   []model.GuestRef
		inDisk int
		diskAt int // the first reference of the outermost open <disk>
		name   string
		inName bool
		depth  int
		domAt  = -1 // depth of the <domain> element
	)
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return refs, fmt.Errorf("libvirt domain xml: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			switch t.Name.Local {
			case "domain":
				if domAt < 0 {
					domAt = depth
				}
			case "name":
				inName = depth == domAt+1
			case "disk":
				if inDisk == 0 {
					diskAt = len(refs)
				}
				inDisk++
			case "target":
				// The disk's name in the guest (vda), which virsh
				// detach-disk takes.
				if inDisk == 0 {
					continue
				}
				for _, a := range t.Attr {
					if a.Name.Local == "dev" {
						for i := diskAt; i < len(refs); i++ {
							refs[i].Target = a.Value
						}
					}
				}
			case "source":
				if inDisk == 0 {
					continue
				}
				line, _ := d.InputPos()
				attr := func(n string) string {
					for _, a := range t.Attr {
						if a.Name.Local == n {
							return a.Value
						}
					}
					return ""
				}
				r := model.GuestRef{File: file, Line: line, Kind: model.GuestLibvirt, Guest: guest}
				switch dev, f, pool := attr("dev"), attr("file"), attr("pool"); {
				case strings.HasPrefix(dev, "/dev/"):
					r.Key, r.Path = "source dev", dev
				case strings.HasPrefix(f, "/dev/"):
					r.Key, r.Path = "source file", f
				case pool != "" && attr("volume") != "":
					r.Key, r.Pool, r.PoolVolume = "source pool", pool, attr("volume")
				default:
					continue
				}
				refs = append(refs, r)
			}
		case xml.EndElement:
			if t.Name.Local == "disk" && inDisk > 0 {
				inDisk--
			}
			inName = false
			depth--
		case xml.CharData:
			if inName && name == "" {
				name = strings.TrimSpace(string(t))
			}
		}
	}
	if name != "" {
		for i := range refs {
			refs[i].Guest = name
		}
	}
	return refs, nil
}
