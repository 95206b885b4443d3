package probes

// Host is the observed model of one node: everything keel knows about the
// host's block-storage stack after one probe pass. Sizes are bytes;
// percentages are float64 with -1 meaning unknown. Maps are keyed by stable
// names: VG name, "vg/lv", PV device path, bcache UUID, kernel device name.
type Host struct {
	Hostname string // /proc/sys/kernel/hostname
	Kernel   string // /proc/sys/kernel/osrelease
	CPUs     int    // online CPUs, from /sys/devices/system/cpu/online
	Memory   Memory

	PVs       map[string]*PV       // by PV device path as LVM names it ("/dev/sda")
	VGs       map[string]*VG       // by VG name
	LVs       map[string]*LV       // by "vg/lv"; hidden LVs without brackets ("vg0/vpool_vdata")
	VDOPools  map[string]*VDOPool  // by "vg/pool"
	ThinPools map[string]*ThinPool // by "vg/pool"
	Bcache    map[string]*Bcache   // backing devices by backing_dev_uuid
	CacheSets map[string]*CacheSet // cache sets by set UUID
	Queues    map[string]*Queue    // block devices by kernel name ("sda", "dm-3")
	DM        map[string]*DMDevice // device-mapper devices by dm name
	LVMConfig LVMConfig
	Proxmox   *Proxmox // nil when /etc/pve/storage.cfg does not exist
	// KeelFiles are the files keel generates and keeps in sync (its udev
	// rules, UdevRulePaths), as the host has them, by path.
	KeelFiles map[string]*KeelFile

	// Errors lists what could not be probed for the host as a whole;
	// per-object problems are in each object's Errors.
	Errors []string
}

// Memory is from /proc/meminfo.
type Memory struct {
	TotalBytes     uint64 // MemTotal
	AvailableBytes uint64 // MemAvailable
	// AnonBytes, ShmemBytes and SwapFreeBytes are AnonPages, Shmem and
	// SwapFree (0 when absent): LVM counts part of them as available to VDO.
	AnonBytes, ShmemBytes, SwapFreeBytes uint64
}

// PV is an LVM physical volume.
type PV struct {
	Name       string   // pv_name, e.g. "/dev/sda"
	UUID       string   // pv_uuid
	VG         string   // VG name, "" for an orphan PV
	Device     string   // kernel name of the device ("sda", "dm-4"), "" if unresolved
	ByID       []string // names in /dev/disk/by-id pointing at the device, sorted
	Size       uint64   // pv_size
	Free       uint64   // pv_free
	DevSize    uint64   // dev_size
	PECount    uint64   // pv_pe_count
	PEAlloc    uint64   // pv_pe_alloc_count
	Rotational int      // queue/rotational: 1, 0, or -1 when unknown
	Transport  string   // "nvme", "scsi", "sata", "virtio", "usb", "virtual" or "" when unknown
	Attr       string   // pv_attr
	Errors     []string
}

// Fast reports whether the PV is on non-rotational storage.
func (p *PV) Fast() bool { return p.Rotational == 0 }

// VG is an LVM volume group.
type VG struct {
	Name        string
	UUID        string
	Attr        string   // vg_attr
	ExtentSize  uint64   // vg_extent_size
	ExtentCount uint64   // vg_extent_count
	FreeCount   uint64   // vg_free_count
	Size        uint64   // vg_size
	Free        uint64   // vg_free
	PVs         []string // PV names, sorted
	LVs         []string // "vg/lv" of every LV, hidden ones included, sorted
	// Shared is set when LVM reports the VG shared between hosts: vg_shared
	// or vg_clustered, or the sixth vg_attr character 's' or 'c' (vgs(8)).
	Shared bool
	// LockType is vg_lock_type: the lvmlockd lock manager ("sanlock",
	// "dlm", ...), "" or "none" for a local VG (lvmlockd(8)).
	LockType string
	Errors   []string
}

// LV is an LVM logical volume, including hidden sub-LVs.
type LV struct {
	VG       string
	Name     string // without brackets
	FullName string // "vg/lv"
	UUID     string
	Attr     string // lv_attr, 10 characters
	SegType  string // segtype of the first segment: linear, striped, vdo-pool, vdo, thin-pool, thin, ...
	Size     uint64 // lv_size
	Hidden   bool   // listed in brackets by LVM
	Active   bool   // lv_attr state 'a'
	Open     bool   // lv_attr open 'o'
	Major    int    // lv_kernel_major, -1 when inactive
	Minor    int    // lv_kernel_minor, -1 when inactive
	DMName   string // device-mapper name ("vg0-lv")

	Pool       string // pool_lv, "vg/pool" or ""
	DataLV     string // data_lv, "vg/sub" or ""
	MetadataLV string // metadata_lv, "vg/sub" or ""
	Origin     string // origin
	Role       string // lv_role
	Layout     string // lv_layout

	DataPercent     float64 // data_percent, -1 when unknown
	MetadataPercent float64 // metadata_percent, -1 when unknown
	MetadataSize    uint64  // lv_metadata_size (thin and cache pools)

	Segments []Segment
	// Fields holds every LV field LVM reported, raw, for anything not typed above.
	Fields map[string]string
	Errors []string
}

// Segment is one LV segment and the extents it maps.
type Segment struct {
	Type     string       // segtype
	StartLE  uint64       // seg_start_pe: first logical extent of the segment
	Extents  uint64       // seg_size_pe
	Size     uint64       // seg_size, bytes
	Stripes  int          // stripes
	Devices  []SegmentDev // devices
	Fields   map[string]string
	PVRanges []PVRange // for linear and striped segments on PVs: the physical extents used
}

// SegmentDev is one entry of a segment's devices list: a PV with its start
// PE, or a sub-LV with its start LE.
type SegmentDev struct {
	Name  string // "/dev/sda" or "vpool_vdata"
	Start uint64
	IsPV  bool
}

// PVRange is a run of physical extents on one PV.
type PVRange struct {
	PV      string // PV name
	FirstPE uint64
	LastPE  uint64 // inclusive
}

// DMDevice is one device-mapper device from dmsetup table and status.
type DMDevice struct {
	Name   string
	Table  []DMLine // one per target segment, in order
	Status []DMLine
}

// DMLine is one target line: "<start> <length> <target> <args>".
type DMLine struct {
	Start  uint64 // sectors
	Length uint64 // sectors
	Target string
	Args   string
}

// Queue is a block device's queue limits and identity from sysfs.
type Queue struct {
	Device              string // kernel name
	Size                uint64 // bytes (size × 512)
	Rotational          int    // queue/rotational, -1 when unknown
	LogicalBlockSize    uint64 // queue/logical_block_size
	PhysicalBlockSize   uint64 // queue/physical_block_size
	WriteZeroesMaxBytes uint64 // queue/write_zeroes_max_bytes; 0 = no offload
	DiscardMaxBytes     uint64 // queue/discard_max_bytes
	DiscardMaxHWBytes   uint64 // queue/discard_max_hw_bytes; 0 = no discard
	DiscardGranularity  uint64 // queue/discard_granularity
	Transport           string // from the sysfs device path
	SysPath             string // target of /sys/block/<dev>
	DMName              string // dm/name for dm devices
	DMUUID              string // dm/uuid for dm devices
	Holders             []string
	Slaves              []string
	Errors              []string
}

// LVMConfig is the effective LVM configuration.
type LVMConfig struct {
	// Values maps "section/key" to the raw value lvmconfig --typeconfig full
	// printed (strings keep their quotes, arrays their brackets).
	Values map[string]string
	// LVMConf is the raw text of /etc/lvm/lvm.conf ("" if unreadable).
	LVMConf string
	Errors  []string
}

// KeelFile is a file keel generates from the desired state, as read from
// the host. Exactly one of Content (the file exists), Missing or Unknown
// describes it.
type KeelFile struct {
	Path    string
	Content string
	// Missing is true when the file does not exist.
	Missing bool
	// Unknown says why the content is not known: the file could not be
	// read, or a replayed snapshot did not record it. A planner must not
	// judge an unknown file.
	Unknown string
}

// Proxmox is what /etc/pve/storage.cfg says.
type Proxmox struct {
	Storages []PVEStorage
	Errors   []string
}

// PVEStorage is one storage definition of storage.cfg.
type PVEStorage struct {
	Type string // "lvm", "lvmthin", "dir", ...
	ID   string
	// VG is the vgname option ("" if absent).
	VG string
	// Saferemove is the saferemove option (false when absent): wipe a
	// volume when it is removed.
	Saferemove bool
	// SaferemoveThroughput, SaferemoveStepsize and SaferemoveDiscard are the
	// options that shape that wipe ("" / false when absent).
	SaferemoveThroughput string
	SaferemoveStepsize   string
	SaferemoveDiscard    bool
	// Options holds every option line as key → value.
	Options map[string]string
}
