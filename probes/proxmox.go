package probes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
)

// DefaultPVEStorageCfg is where Proxmox VE keeps its storage configuration:
// in /etc/pve, the cluster file system pve-cluster's pmxcfs mounts
// (pve-storage reads it through PVE::Cluster as "storage.cfg").
const DefaultPVEStorageCfg = "/etc/pve/storage.cfg"

// Files that show this host is a Proxmox VE node even while storage.cfg
// cannot be read.
const (
	// pveMount is pmxcfs's mount point. pmxcfs (pve-cluster,
	// src/pmxcfs/pmxcfs.c, main) creates the directory and FUSE-mounts the
	// cluster's configuration database over it; before pve-cluster.service
	// has started it, or once pmxcfs exited (fuse_unmount on its way out,
	// a restart), the directory stays behind empty. A FUSE mount whose
	// daemon died answers "transport endpoint is not connected".
	pveMount = "/etc/pve"
	// pveManagerList is dpkg's list of the files of the installed package
	// pve-manager (dpkg keeps /var/lib/dpkg/info/<package>.list for every
	// unpacked package): Proxmox VE itself, whose debian/control pulls in
	// pve-cluster and the storage layer (libpve-storage-perl).
	pveManagerList = "/var/lib/dpkg/info/pve-manager.list"
)

// Options are what a probe pass needs from the desired state. The library
// reads no desired state: its caller passes them.
type Options struct {
	// PVEStorageCfg is the path of Proxmox VE's storage.cfg (the desired
	// state's proxmox.storageConfig); "" means DefaultPVEStorageCfg. A
	// Source that names its own (a replay: hostio.Source.PVEStorageCfg)
	// wins.
	PVEStorageCfg string
}

// pveStorageVersionCmd asks dpkg for the version of pve-storage, the
// Debian package libpve-storage-perl (it ships PVE::Storage and the LVM
// plugin, src/PVE/Storage/LVMPlugin.pm, whose options the planner's
// pve.discard_on_remove remedy names). dpkg-query -W exits 1 with "no
// packages found matching" where it is not installed.
var pveStorageVersionCmd = hostio.Cmd{Name: "dpkg-query", Args: []string{"-W", "-f", "${Version}", "libpve-storage-perl"},
	ReadOnly: true, Timeout: 10 * time.Second}

// probePVEStorageVersion reads the installed pve-storage's version into
// h.PVEStorageVersion on a Proxmox VE node (h.Proxmox set), through the
// pass's Runner so that a node snapshot records it. Any failure (not
// installed, a snapshot without the command, the bcache fast path's
// runner that runs nothing) leaves it "": unknown, and every rule that
// reads it has an answer for that.
func probePVEStorageVersion(ctx context.Context, src hostio.Source, h *model.Host) {
	if h.Proxmox == nil {
		return
	}
	out, err := run(ctx, src, pveStorageVersionCmd)
	if err != nil {
		return
	}
	h.PVEStorageVersion = strings.TrimSpace(string(out))
}

// pveStorageCfgPath is the storage.cfg a pass over src with opt reads.
func pveStorageCfgPath(src hostio.Source, opt Options) string {
	switch {
	case src.PVEStorageCfg != "":
		return src.PVEStorageCfg
	case opt.PVEStorageCfg != "":
		return opt.PVEStorageCfg
	}
	return DefaultPVEStorageCfg
}

// ProbeProxmox reads Proxmox VE's storage.cfg at path (and whether this host
// is a Proxmox VE node) into h.Proxmox and h.PVEStorageCfg, replacing what
// an earlier reading put there: a caller that learnt the configured path
// only after its pass (keel check loads the desired state while it probes)
// reads this part again. A Source with its own path (a replay) keeps it.
func ProbeProxmox(src hostio.Source, h *model.Host, opt Options) {
	path := pveStorageCfgPath(src, opt)
	h.PVEStorageCfg = path
	h.Proxmox = readProxmox(src.FS, path)
}

// readProxmox is nil when no storage.cfg exists at path and nothing shows a
// Proxmox VE node. On a node (pve-manager installed, or /etc/pve present) a
// storage.cfg that is missing or unreadable is not "no shared storage":
// it is unknown which VGs a storage shares, and Unreadable says so; the
// removal rules then count every VG shared (removal.SharedVGs). That is
// the boot window before pmxcfs mounts /etc/pve, and every restart of
// pve-cluster.
func readProxmox(fsys hostio.FS, path string) *model.Proxmox {
	node, mount := pveNode(fsys)
	b, err := fsys.ReadFile(path)
	switch {
	case err == nil:
		p, perr := parseStorageCfg(b)
		if perr != nil {
			p = &model.Proxmox{Errors: []string{perr.Error()}}
		}
		p.Node = node
		return p
	case isNotExist(err) && node == "":
		return nil
	case isNotExist(err):
		why := path + " does not exist"
		if mount != "" {
			why += "; " + mount
		}
		return &model.Proxmox{Node: node, Unreadable: why}
	}
	// A file that exists but cannot be read may list shared storages:
	// unknown, as on a node.
	return &model.Proxmox{Node: node, Unreadable: fmt.Sprintf("%s: %v", path, err)}
}

// pveNode names what shows this host is a Proxmox VE node ("" when
// nothing does), and says what pmxcfs's mount point looks like when that
// explains a missing storage.cfg.
func pveNode(fsys hostio.FS) (node, mount string) {
	// Opened and nothing read: only its existence counts.
	if _, err := fsys.ReadAt(pveManagerList, 0, 0); err == nil {
		node = "pve-manager is installed (" + pveManagerList + ")"
	}
	names, err := fsys.ReadDir(pveMount)
	switch {
	case errors.Is(err, hostio.ErrNotRecorded):
		// A snapshot of a keel that did not look: judged as that keel did.
		return node, ""
	case err == nil && len(names) == 0:
		mount = pveMount + " is empty: pve-cluster's pmxcfs has not mounted it"
	case err != nil && !isNotExist(err):
		mount = fmt.Sprintf("%s: %v", pveMount, err)
	case err != nil:
		return node, ""
	}
	if node == "" {
		node = pveMount + " exists"
	}
	return node, mount
}
