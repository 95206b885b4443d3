package model

import (
	"slices"
	"strings"
)

// Host is the observed model of one node: everything keel knows about the
// host's block-storage stack after one probe pass. Sizes are bytes;
// percentages are float64 with -1 meaning unknown. Maps are keyed by stable
// names: VG name, "vg/lv", PV device path, bcache UUID, kernel device name.
type Host struct {
	Hostname string `json:"hostname"` // /proc/sys/kernel/hostname
	Kernel   string `json:"kernel"`   // /proc/sys/kernel/osrelease
	CPUs     int    `json:"cpus"`     // online CPUs, from /sys/devices/system/cpu/online
	Memory   Memory `json:"memory"`

	PVs       map[string]*PV       `json:"pvs"`       // by PV device path as LVM names it ("/dev/sda")
	VGs       map[string]*VG       `json:"vgs"`       // by VG name
	LVs       map[string]*LV       `json:"lvs"`       // by "vg/lv"; hidden LVs without brackets ("vg0/vpool_vdata")
	VDOPools  map[string]*VDOPool  `json:"vdoPools"`  // by "vg/pool"
	ThinPools map[string]*ThinPool `json:"thinPools"` // by "vg/pool"
	Bcache    map[string]*Bcache   `json:"bcache"`    // backing devices by backing_dev_uuid
	CacheSets map[string]*CacheSet `json:"cacheSets"` // cache sets by set UUID
	Queues    map[string]*Queue    `json:"queues"`    // block devices by kernel name ("sda", "dm-3")
	DM        map[string]*DMDevice `json:"dm"`        // device-mapper devices by dm name
	// Multipath are the device-mapper multipath maps by dm name, with
	// their path groups and the state of each path; nil when the host has
	// none.
	Multipath map[string]*Multipath `json:"multipath,omitempty"`
	// ByID maps the kernel name of every device /dev/disk/by-id points at,
	// partitions included ("sda3"), to those names, sorted.
	ByID map[string][]string `json:"byID"`
	// ByPath is ByID for /dev/disk/by-path (udev's 60-persistent-storage
	// rules name a disk by the bus path it hangs off); empty when keel could
	// not read it.
	ByPath    map[string][]string `json:"byPath,omitempty"`
	LVMConfig LVMConfig           `json:"lvmConfig"`
	// Proxmox is what keel knows of Proxmox VE here: nil when nothing shows
	// this host is a Proxmox VE node and no storage.cfg exists.
	Proxmox *Proxmox `json:"proxmox"`
	// PVEStorageCfg is the path of Proxmox VE's storage.cfg this pass read
	// (the desired state's proxmox.storageConfig, or a replayed snapshot's);
	// kept in node snapshots so that a replay reads the same file.
	PVEStorageCfg string `json:"pveStorageCfg"`
	// PVEStorageVersion is the Debian version of the installed pve-storage
	// (package libpve-storage-perl, as dpkg-query prints it, e.g. "9.1.7"),
	// read on a Proxmox VE node only; "" when unknown: not a node, the
	// package absent, or a snapshot taken before keel read it. Which
	// storage.cfg options exist, and how a removed volume is wiped, depend
	// on it.
	PVEStorageVersion string `json:"pveStorageVersion,omitempty"`
	// Guests are the disks the guests' configurations name (Proxmox VE VM
	// and container configs, libvirt domains); nil when the host has none
	// of those directories.
	Guests *Guests `json:"guests,omitempty"`
	// KeelFiles are the files keel generates and keeps in sync (its udev
	// rules, UdevRulePaths), as the host has them, by path.
	KeelFiles map[string]*KeelFile `json:"keelFiles"`
	// MD are the md (software RAID) arrays, by kernel name ("md0"), read
	// from /sys/block/md*/md (MDArray).
	MD map[string]*MDArray `json:"md,omitempty"`

	// Suspended lists, sorted, the device-mapper devices that stayed
	// suspended through the pass's wait (suspended.go): left so by a killed
	// LVM command, or by hand. LVM's report then skipped them.
	Suspended []string `json:"suspended,omitempty"`
	// Commands lists the LVM and dmsetup commands running during the pass
	// (/proc/PID/cmdline), read only when a device stayed suspended: one of
	// them may have suspended it and be about to resume it.
	Commands []Process `json:"commands,omitempty"`

	// Lvmlockd is what lvmlockd says of this host's lockspaces, read only
	// when a VG has an lvmlockd lock type (VG.Lockd); nil otherwise, and
	// in a snapshot taken before keel read it.
	Lvmlockd *Lvmlockd `json:"lvmlockd,omitempty"`

	// Pollers are the processes that may poll a pvmove (Process), read
	// only when the LVM report holds a pvmove LV; nil when it holds none.
	Pollers []Process `json:"pollers,omitempty"`
	// Errors lists what could not be probed for the host as a whole;
	// per-object problems are in each object's Errors.
	Errors []string `json:"errors"`
}

// Device returns the kernel name of the block device a /dev path names
// ("/dev/sda", "/dev/sda3", "/dev/bcache0", "/dev/mapper/NAME",
// "/dev/disk/by-id/NAME", "/dev/disk/by-path/NAME"), as this probe saw the
// devices in /sys/block, /dev/disk/by-id and /dev/disk/by-path; "" when it
// saw none. Paths of LVs ("/dev/vg/lv") are not resolved here.
func (h *Host) Device(path string) string {
	rest, ok := strings.CutPrefix(path, "/dev/")
	if !ok || rest == "" {
		return ""
	}
	if id, ok := strings.CutPrefix(rest, "disk/by-id/"); ok {
		for k, ids := range h.ByID {
			if slices.Contains(ids, id) {
				return k
			}
		}
		return ""
	}
	if id, ok := strings.CutPrefix(rest, "disk/by-path/"); ok {
		for k, ids := range h.ByPath {
			if slices.Contains(ids, id) {
				return k
			}
		}
		return ""
	}
	if name, ok := strings.CutPrefix(rest, "mapper/"); ok {
		for k, q := range h.Queues {
			if q.DMName == name {
				return k
			}
		}
		return ""
	}
	if strings.Contains(rest, "/") {
		return ""
	}
	if _, ok := h.Queues[rest]; ok {
		return rest
	}
	if _, ok := h.ByID[rest]; ok {
		return rest
	}
	return ""
}

// Memory is from /proc/meminfo.
type Memory struct {
	TotalBytes     uint64 `json:"totalBytes"`     // MemTotal
	AvailableBytes uint64 `json:"availableBytes"` // MemAvailable
	// AnonBytes, ShmemBytes and SwapFreeBytes are AnonPages, Shmem and
	// SwapFree (0 when absent): LVM counts part of them as available to VDO.
	AnonBytes     uint64 `json:"anonBytes"`
	ShmemBytes    uint64 `json:"shmemBytes"`
	SwapFreeBytes uint64 `json:"swapFreeBytes"`
}

// PV is an LVM physical volume.
type PV struct {
	Name       string   `json:"name"`       // pv_name, e.g. "/dev/sda"
	UUID       string   `json:"uuid"`       // pv_uuid
	VG         string   `json:"vg"`         // VG name, "" for an orphan PV
	Device     string   `json:"device"`     // kernel name of the device ("sda", "dm-4"), "" if unresolved
	ByID       []string `json:"byID"`       // names in /dev/disk/by-id pointing at the device, sorted
	Size       uint64   `json:"size"`       // pv_size
	Free       uint64   `json:"free"`       // pv_free
	DevSize    uint64   `json:"devSize"`    // dev_size
	PECount    uint64   `json:"peCount"`    // pv_pe_count
	PEAlloc    uint64   `json:"peAlloc"`    // pv_pe_alloc_count
	Rotational int      `json:"rotational"` // queue/rotational: 1, 0, or -1 when unknown
	Transport  string   `json:"transport"`  // "nvme", "scsi", "sata", "virtio", "usb", "virtual" or "" when unknown
	Attr       string   `json:"attr"`       // pv_attr
	Errors     []string `json:"errors"`
}

// Fast reports whether the PV is on non-rotational storage.
func (p *PV) Fast() bool { return p.Rotational == 0 }

// VG is an LVM volume group.
type VG struct {
	Name        string   `json:"name"`
	UUID        string   `json:"uuid"`
	Attr        string   `json:"attr"`        // vg_attr
	ExtentSize  uint64   `json:"extentSize"`  // vg_extent_size
	ExtentCount uint64   `json:"extentCount"` // vg_extent_count
	FreeCount   uint64   `json:"freeCount"`   // vg_free_count
	Size        uint64   `json:"size"`        // vg_size
	Free        uint64   `json:"free"`        // vg_free
	Seqno       uint64   `json:"seqno"`       // vg_seqno: LVM adds one at every commit of the VG's metadata
	PVs         []string `json:"pvs"`         // PV names, sorted
	LVs         []string `json:"lvs"`         // "vg/lv" of every LV, hidden ones included, sorted
	// Shared is set when LVM reports the VG shared between hosts: vg_shared
	// or vg_clustered, or the sixth vg_attr character 's' or 'c' (vgs(8)).
	Shared bool `json:"shared"`
	// LockType is vg_lock_type: the lvmlockd lock manager ("sanlock",
	// "dlm", ...), "" or "none" for a local VG (lvmlockd(8)).
	LockType string `json:"lockType"`
	// LockArgs is vg_lock_args: the lock manager's arguments for the VG
	// (for sanlock the version and the LV holding its leases, "lvmlock"),
	// "" for a local VG (lvmlockd(8)).
	LockArgs string `json:"lockArgs,omitempty"`
	// NoAutoactivation is set when LVM reports vg_autoactivation off
	// (vgchange --setautoactivation n): vgchange -aay then activates none
	// of its LVs (lvm2 tools/vgchange.c, _vgchange_activate). An LVM
	// older than 2.03.12 has no such field, and no such flag.
	NoAutoactivation bool `json:"noAutoactivation,omitempty"`
	// Tags are vg_tags, which auto_activation_volume_list's "@tag" entries
	// match as well as the LV's own (lvm2 lib/activate/activate.c).
	Tags []string `json:"tags,omitempty"`
	// Profile is vg_profile, the metadata profile attached to the VG
	// (vgchange --metadataprofile), which its LVs without one of their
	// own use (lvm.conf(5), config/profile_dir).
	Profile string   `json:"profile,omitempty"`
	Errors  []string `json:"errors"`
}

// Lockd reports whether the VG is shared through lvmlockd: its lock type
// is one of lvmlockd's lock managers, sanlock or dlm (lvm2
// lib/locking/lvmlockd.h, LOCK_TYPE_SANLOCK and LOCK_TYPE_DLM; "clvm" is
// the older clvmd's, "none" and "" a local VG). Such a VG is used only
// once lvmlockd has started its lockspace on this host (lvmlockd(8),
// "Lock start").
func (v *VG) Lockd() bool { return v.LockType == "sanlock" || v.LockType == "dlm" }

// Lvmlockd is lvmlockd's state on this host as lvmlockctl --info prints it
// (lvm2 daemons/lvmlockd/lvmlockctl.c, format_info_ls: a "VG <name>
// lock_type=<type> <uuid>" line for each lockspace lvmlockd holds).
type Lvmlockd struct {
	// Running is set when lvmlockctl reached lvmlockd; unset when it said
	// "Cannot connect to lvmlockd." (lvmlockctl.c, main).
	Running bool `json:"running"`
	// Started lists, sorted, the VGs whose lockspace lvmlockd holds here:
	// started, or being started.
	Started []string `json:"started,omitempty"`
	// Error is why keel cannot tell (lvmlockctl could not run, or failed
	// otherwise); Running and Started then say nothing.
	Error string `json:"error,omitempty"`
}

// LockStarted reports whether lvmlockd holds vg's lockspace here.
func (l *Lvmlockd) LockStarted(vg string) bool { return slices.Contains(l.Started, vg) }

// Partial reports whether LVM reads the VG with PVs missing: the fourth
// vg_attr character is 'p' (vgs(8)).
func (v *VG) Partial() bool { return len(v.Attr) > 3 && v.Attr[3] == 'p' }

// LV is an LVM logical volume, including hidden sub-LVs.
type LV struct {
	VG       string `json:"vg"`
	Name     string `json:"name"`     // without brackets
	FullName string `json:"fullName"` // "vg/lv"
	UUID     string `json:"uuid"`
	Attr     string `json:"attr"`    // lv_attr, 10 characters
	SegType  string `json:"segType"` // segtype of the first segment: linear, striped, vdo-pool, vdo, thin-pool, thin, ...
	Size     uint64 `json:"size"`    // lv_size
	Hidden   bool   `json:"hidden"`  // listed in brackets by LVM
	Active   bool   `json:"active"`  // lv_attr state 'a'
	Open     bool   `json:"open"`    // lv_attr open 'o'
	Major    int    `json:"major"`   // lv_kernel_major, -1 when inactive
	Minor    int    `json:"minor"`   // lv_kernel_minor, -1 when inactive
	DMName   string `json:"dmName"`  // device-mapper name ("vg0-lv")

	Pool       string `json:"pool"`       // pool_lv, "vg/pool" or ""
	DataLV     string `json:"dataLV"`     // data_lv, "vg/sub" or ""
	MetadataLV string `json:"metadataLV"` // metadata_lv, "vg/sub" or ""
	Origin     string `json:"origin"`     // origin
	Role       string `json:"role"`       // lv_role
	Layout     string `json:"layout"`     // lv_layout

	DataPercent     float64 `json:"dataPercent"`     // data_percent, -1 when unknown
	MetadataPercent float64 `json:"metadataPercent"` // metadata_percent, -1 when unknown
	MetadataSize    uint64  `json:"metadataSize"`    // lv_metadata_size (thin and cache pools)

	Segments []Segment `json:"segments"`
	// Fields holds every LV field LVM reported, raw, for anything not typed above.
	Fields Fields   `json:"fields"`
	Errors []string `json:"errors"`
}

// Segment is one LV segment and the extents it maps.
type Segment struct {
	Type    string       `json:"type"`    // segtype
	StartLE uint64       `json:"startLE"` // seg_start_pe: first logical extent of the segment
	Extents uint64       `json:"extents"` // seg_size_pe
	Size    uint64       `json:"size"`    // seg_size, bytes
	Stripes int          `json:"stripes"` // stripes
	Devices []SegmentDev `json:"devices"` // devices
	// Fields holds every segment field LVM reported, raw.
	Fields   Fields    `json:"fields"`
	PVRanges []PVRange `json:"pvRanges"` // for linear and striped segments on PVs: the physical extents used
}

// SegmentDev is one entry of a segment's devices list: a PV with its start
// PE, or a sub-LV with its start LE.
type SegmentDev struct {
	Name  string `json:"name"` // "/dev/sda" or "vpool_vdata"
	Start uint64 `json:"start"`
	IsPV  bool   `json:"isPV"`
}

// PVRange is a run of physical extents on one PV.
type PVRange struct {
	PV      string `json:"pv"` // PV name
	FirstPE uint64 `json:"firstPE"`
	LastPE  uint64 `json:"lastPE"` // inclusive
}

// DMDevice is one device-mapper device from dmsetup table and status.
type DMDevice struct {
	Name   string   `json:"name"`
	Table  []DMLine `json:"table"` // one per target segment, in order
	Status []DMLine `json:"status"`
}

// DMLine is one target line: "<start> <length> <target> <args>".
type DMLine struct {
	Start  uint64 `json:"start"`  // sectors
	Length uint64 `json:"length"` // sectors
	Target string `json:"target"`
	Args   string `json:"args"`
}

// Queue is a block device's queue limits and identity from sysfs.
type Queue struct {
	Device              string   `json:"device"`              // kernel name
	Size                uint64   `json:"size"`                // bytes (size × 512)
	Rotational          int      `json:"rotational"`          // queue/rotational, -1 when unknown
	LogicalBlockSize    uint64   `json:"logicalBlockSize"`    // queue/logical_block_size
	PhysicalBlockSize   uint64   `json:"physicalBlockSize"`   // queue/physical_block_size
	WriteZeroesMaxBytes uint64   `json:"writeZeroesMaxBytes"` // queue/write_zeroes_max_bytes; 0 = no offload
	DiscardMaxBytes     uint64   `json:"discardMaxBytes"`     // queue/discard_max_bytes
	DiscardMaxHWBytes   uint64   `json:"discardMaxHWBytes"`   // queue/discard_max_hw_bytes; 0 = no discard
	DiscardGranularity  uint64   `json:"discardGranularity"`  // queue/discard_granularity
	Transport           string   `json:"transport"`           // from the sysfs device path
	SysPath             string   `json:"sysPath"`             // target of /sys/block/<dev>
	DMName              string   `json:"dmName"`              // dm/name for dm devices
	DMUUID              string   `json:"dmuuid"`              // dm/uuid for dm devices
	Holders             []string `json:"holders"`
	Slaves              []string `json:"slaves"`
	Errors              []string `json:"errors"`
}

// LVMConfig is the effective LVM configuration.
type LVMConfig struct {
	// Values maps "section/key" to the raw value lvmconfig --typeconfig full
	// printed (strings keep their quotes, arrays their brackets).
	Values map[string]string `json:"values"`
	// LVMConf is the raw text of /etc/lvm/lvm.conf ("" if unreadable).
	LVMConf string `json:"lvmConf"`
	// LVMLocalConf is the raw text of /etc/lvm/lvmlocal.conf, which LVM
	// reads after lvm.conf and whose settings win (lvm2
	// lib/commands/toolcontext.c, lvm.conf(5) "config cascade"); "" when
	// the file is absent or unreadable.
	LVMLocalConf string `json:"lvmLocalConf,omitempty"`
	// DevicesFile is LVM's devices file (/etc/lvm/devices/system.devices
	// unless devices/devicesfile names another), nil when it does not
	// exist.
	DevicesFile *DevicesFile `json:"devicesFile,omitempty"`
	Errors      []string     `json:"errors"`
}

// DevicesFile is LVM's devices file as read: with use_devicesfile=1 and
// the file present, LVM uses only the devices it lists and global_filter
// no longer decides (lvmdevices(8)).
type DevicesFile struct {
	Path    string        `json:"path"`
	Entries []DeviceEntry `json:"entries"`
}

// DeviceEntry is one line of the devices file (lvm2
// lib/device/device_id.c, device_ids_read): IDTYPE and IDNAME identify the
// device (sys_wwid, wwid_naa, sys_serial, mpath_uuid, md_uuid,
// lvmlv_uuid, devname, …), DEVNAME is the name it last had, PVID the PV
// UUID without dashes ("" for a device that was no PV), PART a partition
// number ("" for none).
type DeviceEntry struct {
	IDType  string `json:"idType"`
	IDName  string `json:"idName"`
	DevName string `json:"devName,omitempty"`
	PVID    string `json:"pvid,omitempty"`
	Part    string `json:"part,omitempty"`
}

// KeelFile is a file keel generates from the desired state, as read from
// the host. Exactly one of Content (the file exists), Missing or Unknown
// describes it.
type KeelFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	// Missing is true when the file does not exist.
	Missing bool `json:"missing"`
	// Unknown says why the content is not known: the file could not be
	// read, or a replayed snapshot did not record it. A planner must not
	// judge an unknown file.
	Unknown string `json:"unknown"`
}

// Proxmox is what storage.cfg says, and whether this host is a Proxmox VE
// node.
type Proxmox struct {
	// Node names the file that shows this host is a Proxmox VE node
	// (pve-manager's dpkg file list, or /etc/pve, pve-cluster's mount
	// point); "" when only a storage.cfg was found.
	Node string `json:"node,omitempty"`
	// Unreadable says why storage.cfg could not be read ("" when it was):
	// missing on a node whose /etc/pve is not mounted (pmxcfs not started
	// yet, or restarting), or an error reading it. keel cannot tell then
	// which VGs a Proxmox storage shares, so it counts every VG shared.
	Unreadable string       `json:"unreadable,omitempty"`
	Storages   []PVEStorage `json:"storages"`
	// Errors are the problems of a storage.cfg that was read but not parsed.
	Errors []string `json:"errors"`
}

// PVEStorage is one storage definition of storage.cfg.
type PVEStorage struct {
	Type string `json:"type"` // "lvm", "lvmthin", "dir", ...
	ID   string `json:"id"`
	// VG is the vgname option ("" if absent).
	VG string `json:"vg"`
	// Saferemove is the saferemove option (false when absent): wipe a
	// volume when it is removed.
	Saferemove bool `json:"saferemove"`
	// SaferemoveThroughput, SaferemoveStepsize and SaferemoveDiscard are the
	// options that shape that wipe ("" / false when absent).
	SaferemoveThroughput string `json:"saferemoveThroughput"`
	SaferemoveStepsize   string `json:"saferemoveStepsize"`
	SaferemoveDiscard    bool   `json:"saferemoveDiscard"`
	// Options holds every option line as key → value.
	Options map[string]string `json:"options"`
}

// UdevRulePaths are keel's generated udev rules files, read by every pass so
// the planner can judge them: the rule that lets LVM scan keel's LVs as PVs
// (68 sorts before lvm2's 69-dm-lvm.rules, which reads LVM_PVSCAN_ON_LVS)
// and the rule that sets bcache tunables at registration (70 sorts after
// bcache-tools' 69-bcache.rules, which registers the devices).
var UdevRulePaths = []string{"/etc/udev/rules.d/68-keel-pvscan-on-lvs.rules", "/etc/udev/rules.d/70-keel-bcache.rules"}

// LVMProfileDir is where LVM reads its configuration profiles, a profile
// NAME from NAME.profile (lvm.conf(5), config/profile_dir; lvmthin(7),
// "Automatic extend settings"). keel writes a pool's autoextend policy
// there under KeelProfilePrefix, and every pass reads those files; the
// directory's own KeelFile says whether it was missing or unreadable.
const LVMProfileDir = "/etc/lvm/profile"

// KeelProfilePrefix starts the name of every LVM profile keel writes.
const KeelProfilePrefix = "keel-"

// Process is a running process from /proc/PID/cmdline: one that may poll
// a pvmove (a pvmove command, in the foreground or the child `pvmove -b`
// leaves polling, or the lvm lvpoll command lvmpolld runs for each move
// it polls; Host.Pollers), or an LVM or dmsetup command running while a
// device stays suspended (Host.Commands).
type Process struct {
	PID  int      `json:"pid"`
	Argv []string `json:"argv"`
}
