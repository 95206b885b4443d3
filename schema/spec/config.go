// Package spec is the Go form of a validated desired state: what the
// planner reads. It has no I/O: the schema package loads, validates and
// decodes /etc/keel/*.cue into it.
package spec

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/keel-storage/keel/lvm/units"
	"github.com/keel-storage/keel/lvm/vdo"
)

// Config is a host's whole desired storage stack, decoded from CUE after
// validation with every default filled in. Field names follow the CUE schema
// (schema/keel.cue); maps are keyed by the object's name.
type Config struct {
	LVM          *LVM                   `json:"lvm,omitempty"`
	VolumeGroups map[string]VolumeGroup `json:"volumeGroups,omitempty"`
	Bcache       map[string]Bcache      `json:"bcache,omitempty"`
	Removal      Removal                `json:"removal"`
	Proxmox      Proxmox                `json:"proxmox"`
	Alerts       Alerts                 `json:"alerts"`
	Waivers      []Waiver               `json:"waivers,omitempty"`
	Holds        []Hold                 `json:"holds,omitempty"`
	Agent        Agent                  `json:"agent"`
}

// WaiverDay is the day t falls on in UTC, in the form of Waiver.Expires:
// what a caller with a clock hands the planner to judge waivers on.
func WaiverDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// Waiver accepts one finding (ID) on one object until the end of the day
// Expires (YYYY-MM-DD, UTC), for the reason given.
type Waiver struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Reason  string `json:"reason"`
	Expires string `json:"expires"`
}

// Hold is an operator's hold written in the desired state: keel changes
// nothing on Object through the day Until (YYYY-MM-DD, UTC; "" until the
// entry is removed), as keel hold records one on a single host.
type Hold struct {
	Object string `json:"object"`
	Reason string `json:"reason"`
	Until  string `json:"until,omitempty"`
}

// LVM is the part of lvm.conf that keel keeps: devices/scan_lvs,
// devices/global_filter, devices/use_devicesfile and
// activation/raid_fault_policy. A nil or empty field is not managed.
type LVM struct {
	ScanLVs        *bool         `json:"scanLVs,omitempty"`
	GlobalFilter   *GlobalFilter `json:"globalFilter,omitempty"`
	UseDevicesFile *bool         `json:"useDevicesFile,omitempty"`
	// RaidFaultPolicy is activation/raid_fault_policy, "warn" or
	// "allocate" (lvmraid(7)): what dmeventd does when a leg of a RAID LV
	// fails.
	RaidFaultPolicy string `json:"raidFaultPolicy,omitempty"`
}

// GlobalFilter lists regexes as they stand inside lvm.conf's "r|…|" and "a|…|"
// entries, in LVM's own regex dialect (lvm/lvmregex). The generated
// filter is the rejects, then the accepts, then "r|.*|" when Accept is
// non-empty: with accepts it is an allow-list. LVM accepts a device as soon
// as one of its names (/dev/dm-N, /dev/mapper/VG-LV, /dev/VG/LV,
// /dev/disk/by-id/dm-…) meets an accept before any reject, and uses a device
// no entry matches, so no accept-all follows the rejects. The rejects the
// host's filter already has (a platform's, such as Proxmox VE's zd, rbd
// and nbd rejects) are kept after the declared ones unless Drop names them.
type GlobalFilter struct {
	Reject []string `json:"reject,omitempty"`
	Accept []string `json:"accept,omitempty"`
	// Drop lists rejects of the host's filter, regexes as they stand inside
	// "r|…|", that keel removes when it writes the filter.
	Drop []string `json:"drop,omitempty"`
}

// VolumeGroup is one LVM volume group and the pools keel keeps in it.
type VolumeGroup struct {
	// PVs are /dev/disk/by-id paths, or an LV path such as /dev/vdolab/vdolv
	// when the VG is stacked on an LV.
	PVs []string `json:"pvs"`
	// Create allows keel to create the VG when its PVs carry no signature.
	Create bool `json:"create"`
	// Shared declares that other hosts use the VG (a SAN LUN seen by
	// several hosts without lvmlockd): its absent LVs are never removed
	// here, as in a VG LVM or Proxmox VE reports shared.
	Shared bool `json:"shared"`
	// Absent lists LVs that must be removed safely (zeroed or discarded
	// first), each by name and, when pinned, by lv_uuid.
	Absent    []AbsentLV          `json:"absent,omitempty"`
	VDOPools  map[string]VDOPool  `json:"vdoPools,omitempty"`
	ThinPools map[string]ThinPool `json:"thinPools,omitempty"`
}

// SharedVGs names, sorted, the VGs c declares shared (VolumeGroup.Shared).
func (c *Config) SharedVGs() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(c.VolumeGroups)) {
		if c.VolumeGroups[name].Shared {
			out = append(out, name)
		}
	}
	return out
}

// AbsentLV is one entry of an absent list: an LV name, written as a plain
// string, or {name, uuid} when the entry pins the one LV it means by its
// lv_uuid (docs/removal.md, "Pinning").
type AbsentLV struct {
	Name string `json:"name"`
	// UUID is the pinned lv_uuid; "" when the entry pins none.
	UUID string `json:"uuid,omitempty"`
}

// UnmarshalJSON reads either form of an absent entry.
func (a *AbsentLV) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err == nil {
		*a = AbsentLV{Name: name}
		return nil
	}
	type plain AbsentLV
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("absent entry: want a name or {name, uuid}: %w", err)
	}
	*a = AbsentLV(p)
	return nil
}

// MarshalJSON writes an unpinned entry back as its plain name.
func (a AbsentLV) MarshalJSON() ([]byte, error) {
	if a.UUID == "" {
		return json.Marshal(a.Name)
	}
	type plain AbsentLV
	return json.Marshal(plain(a))
}

// AbsentNames are the names of the absent entries, in their order.
func (g VolumeGroup) AbsentNames() []string {
	out := make([]string, len(g.Absent))
	for i, a := range g.Absent {
		out[i] = a.Name
	}
	return out
}

// VDOPool is an LVM-VDO pool and the VDO LV on top of it. Sizes are
// decoded once into units.Size (the text as written and its bytes).
type VDOPool struct {
	LV            string     `json:"lv"`
	Size          units.Size `json:"size"`
	VirtualSize   units.Size `json:"virtualSize"`
	Overcommit    bool       `json:"overcommit"`
	SlabSize      units.Size `json:"slabSize"`
	IndexMemory   units.Size `json:"indexMemory"`
	SparseIndex   bool       `json:"sparseIndex"`
	Compression   bool       `json:"compression"`
	Deduplication bool       `json:"deduplication"`
	MaxDiscard    units.Size `json:"maxDiscard"`
	BlockMapCache units.Size `json:"blockMapCache"`
	Threads       Threads    `json:"threads"`
	// Split, when set, names the fast PVs that must hold the head (index,
	// block-map roots) and the tail (recovery journal, slab summary).
	Split            *Split  `json:"split,omitempty"`
	UsedPercentAlert float64 `json:"usedPercentAlert"`
	// Autoextend is the pool's autoextend policy; nil when not declared.
	Autoextend *Autoextend `json:"autoextend,omitempty"`
	Create     bool        `json:"create"`
}

// Threads is a VDO thread layout. Auto means one thread per CPU, spread as the
// reference layout does (lvm/vdo.AutoThreads); otherwise the counts are
// explicit.
type Threads struct {
	Auto bool `json:"-"`
	vdo.Threads
}

// Split declares the fast PVs of a split VDO pool.
type Split struct {
	Fast []string `json:"fast"`
}

// ThinPool is a dm-thin pool.
type ThinPool struct {
	Size                 units.Size `json:"size,omitempty"`
	ChunkSize            units.Size `json:"chunkSize"`
	Zero                 *bool      `json:"zero,omitempty"`
	MetadataSize         units.Size `json:"metadataSize,omitempty"`
	RAID                 *RAID      `json:"raid,omitempty"`
	DataPercentAlert     float64    `json:"dataPercentAlert"`
	MetadataPercentAlert float64    `json:"metadataPercentAlert"`
	// MaxOverprovision is the most the thin LVs' virtual sizes may add up
	// to, as a multiple of the pool's data size; 0 when not declared.
	MaxOverprovision float64 `json:"maxOverprovision,omitempty"`
	// Autoextend is the pool's autoextend policy; nil when not declared.
	Autoextend *Autoextend `json:"autoextend,omitempty"`
	Create     bool        `json:"create"`
}

// Autoextend is a pool's autoextend policy: dmeventd grows the pool by
// Percent of its size once its use passes Threshold percent, and keel
// turns that off before the pool would pass Maximum.
type Autoextend struct {
	Threshold int        `json:"threshold"`
	Percent   int        `json:"percent"`
	Maximum   units.Size `json:"maximum"`
}

// RAID describes the hardware RAID under a thin pool; the chunk must cover a
// whole stripe (StripeSize × DataDisks).
type RAID struct {
	StripeSize units.Size `json:"stripeSize"`
	DataDisks  int        `json:"dataDisks"`
}

// Bcache is one bcache backing device and its per-device tunables, which the
// kernel forgets at every registration. A nil tunable is not managed.
type Bcache struct {
	Backing                   string `json:"backing"`
	CacheSet                  string `json:"cacheSet,omitempty"`
	CacheMode                 string `json:"cacheMode,omitempty"`
	SequentialCutoff          *int64 `json:"sequentialCutoff,omitempty"`
	WritebackPercent          *int64 `json:"writebackPercent,omitempty"`
	WritebackRate             *int64 `json:"writebackRate,omitempty"`
	WritebackRateMinimum      *int64 `json:"writebackRateMinimum,omitempty"`
	CongestedReadThresholdUs  *int64 `json:"congestedReadThresholdUs,omitempty"`
	CongestedWriteThresholdUs *int64 `json:"congestedWriteThresholdUs,omitempty"`

	// cutoffErr is why a sequentialCutoff size string is not a byte count
	// bcache takes (reported by check with the field's position).
	cutoffErr error
}

// maxSequentialCutoff is the largest sequential_cutoff bcache stores: an
// unsigned int of bytes (drivers/md/bcache/sysfs.c clamps it to UINT_MAX).
const maxSequentialCutoff = 1<<32 - 1

// UnmarshalJSON decodes a Bcache whose sequentialCutoff is a size string
// ("4M", as every size in the schema) or a number of bytes (accepted as
// before sizes were strings here); SequentialCutoff holds bytes either way.
func (b *Bcache) UnmarshalJSON(data []byte) error {
	type plain Bcache // without this method
	var aux struct {
		plain
		SequentialCutoff json.RawMessage `json:"sequentialCutoff,omitempty"`
	}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	*b = Bcache(aux.plain)
	b.SequentialCutoff, b.cutoffErr = nil, nil
	raw := aux.SequentialCutoff
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err == nil {
		b.SequentialCutoff = &n
		return nil
	}
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		return fmt.Errorf("sequentialCutoff: want a size such as \"4M\": %w", err)
	}
	bytes, err := units.ParseSize(text)
	if err == nil && bytes > maxSequentialCutoff {
		err = fmt.Errorf("above bcache's limit of %d bytes (4G - 1)", maxSequentialCutoff)
	}
	if err != nil {
		b.cutoffErr = fmt.Errorf("invalid value %q: %w", text, err)
		return nil
	}
	n = int64(bytes)
	b.SequentialCutoff = &n
	return nil
}

// Removal says how LVs listed in Absent are wiped before lvremove.
type Removal struct {
	Mode string `json:"mode"` // "zeroout" or "discard"
	// Step is e.g. "32M": a size, but never an LVM argument (the wipe's
	// own step), checked by the schema and by keel's size check.
	Step string `json:"step"`
	// AllowUnzeroedThinReuse lets keel remove a thin LV whose pool does not
	// zero new chunks, so that its bytes can reach the next thin LV of the
	// pool; without it that removal is held.
	AllowUnzeroedThinReuse bool `json:"allowUnzeroedThinReuse"`
}

// Proxmox points at Proxmox VE's storage configuration: the probe reads
// storage.cfg at StorageConfig (probes.Options.PVEStorageCfg).
type Proxmox struct {
	StorageConfig string `json:"storageConfig"`
}

// AgentAudit is the Agent.Mode in which keel run observes, reports and
// alerts but never changes the host.
const AgentAudit = "audit"

// Agent is how keel run treats the host: Mode is "converge" (the default)
// or AgentAudit.
type Agent struct {
	Mode string `json:"mode"`
	// ResumeSuspendedMinutes, when set, lets keel resume a device of LVM
	// that stays suspended (dm.suspended) once no LVM or dmsetup command
	// was seen on its VG for that many minutes; 0 only reports it.
	ResumeSuspendedMinutes int `json:"resumeSuspendedMinutes,omitempty"`
	// AuditUndeclared, unless false, audits the pools the desired state
	// does not declare against keel's reference rules in every plan
	// (AuditsUndeclared). A pointer: a desired state without an agent
	// block decodes no default, and unset means on.
	AuditUndeclared *bool `json:"auditUndeclared,omitempty"`
}

// AuditsUndeclared reports whether the pools the desired state does not
// declare are audited: true unless agent.auditUndeclared is false.
func (a Agent) AuditsUndeclared() bool { return a.AuditUndeclared == nil || *a.AuditUndeclared }

// Alerts says where keel sends alert transitions besides the journal.
type Alerts struct {
	Textfile string   `json:"textfile,omitempty"`
	Exec     []string `json:"exec,omitempty"`
}

// CutoffErr says why the sequentialCutoff size string did not decode to a
// byte count (nil when it did); the schema's checks report it with the
// field's place.
func (b Bcache) CutoffErr() error { return b.cutoffErr }
