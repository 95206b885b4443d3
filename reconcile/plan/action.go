package plan

import "strconv"

// Class says when and how an action may be applied.
type Class int

// Action classes.
const (
	// Live actions can be applied now, with the stack in use.
	Live Class = iota
	// Maintenance actions need the pool stopped (VDO threads, max_discard,
	// block-map cache): only with keel apply --maintenance and no open LV.
	Maintenance
	// Immutable drift cannot change after creation (chunk size, slab size,
	// index memory, sparse index). The remedy is a rebuild; keel never
	// applies or retries it.
	Immutable
	// Destructive actions destroy data and run only when the desired state
	// asks for them explicitly, and at most once.
	Destructive
)

var classNames = [...]string{"live", "maintenance", "immutable", "destructive"}

// String returns the lowercase class name.
func (c Class) String() string {
	if c < 0 || int(c) >= len(classNames) {
		return "unknown"
	}
	return classNames[c]
}

// MarshalText writes the class name.
func (c Class) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// Kind says which applier runs an action.
type Kind string

// Action kinds.
const (
	// KindCommand runs Commands in order (argv, never a shell).
	KindCommand Kind = "command"
	// KindSysfs writes Writes in order and reads each value back.
	KindSysfs Kind = "sysfs"
	// KindLVMConf edits lvm.conf as LVMConf says, keeping every other byte.
	KindLVMConf Kind = "lvmconf"
	// KindWipe zeroes or discards an LV in steps, then removes it.
	KindWipe Kind = "wipe"
	// KindFile replaces Files atomically (a temporary file renamed over
	// each), then runs Commands, which only tell a daemon to read them now
	// (UdevReload): their failure is logged and does not fail the action.
	KindFile Kind = "file"
	// KindNone is a report-only action (immutable drift): nothing runs.
	KindNone Kind = "none"
)

// Action is one step the executor may take. It is plain data: the planner
// builds it, keel plan prints it, the executor applies it and then re-probes
// the host to verify that the findings it remedies are gone.
type Action struct {
	// ID is stable for the same change on the same object, e.g.
	// "vdo.compression:vdolab/vdopool"; the executor keys retries and
	// "stuck" state on it.
	ID      string `json:"id"`
	Kind    Kind   `json:"kind"`
	Class   Class  `json:"class"`
	Object  string `json:"object"`
	Summary string `json:"summary"`
	// Commands are the exact argv lists a KindCommand action runs (and a
	// KindFile action runs after its writes).
	Commands [][]string `json:"commands,omitempty"`
	// Writes are the sysfs writes of a KindSysfs action.
	Writes []SysfsWrite `json:"writes,omitempty"`
	// LVMConf is the change of a KindLVMConf action.
	LVMConf *LVMConfChange `json:"lvmconf,omitempty"`
	// Wipe is the removal a KindWipe action performs.
	Wipe *WipeSpec `json:"wipe,omitempty"`
	// Files are the files a KindFile action writes.
	Files []FileWrite `json:"files,omitempty"`
	// Remedies lists the keys (Finding.Key) of the findings this action
	// clears; the executor checks them after re-probing.
	Remedies []string `json:"remedies,omitempty"`
}

// SysfsWrite is one value written to a sysfs attribute, as a plain decimal
// or keyword, and the value expected when it is read back.
type SysfsWrite struct {
	Path  string `json:"path"`
	Value string `json:"value"`
}

// FileWrite is the whole content of one file keel generates, or, with
// Remove, one such file keel removes.
type FileWrite struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Mode    uint32 `json:"mode"` // permission bits, e.g. 0o644
	// Remove removes the file (a missing one is no error); Content and
	// Mode are unused.
	Remove bool `json:"remove,omitempty"`
}

// LVMConfChange lists the lvm.conf settings to assert; nil fields are left alone.
type LVMConfChange struct {
	ScanLVs        *bool    `json:"scanLVs,omitempty"`
	GlobalFilter   []string `json:"globalFilter,omitempty"` // full entries, e.g. "r|^/dev/zd.*|"
	UseDevicesFile *bool    `json:"useDevicesFile,omitempty"`
	// RaidFaultPolicy is activation/raid_fault_policy ("" not changed).
	RaidFaultPolicy string `json:"raidFaultPolicy,omitempty"`
}

// WipeSpec describes a safe removal: rename to del-<name>, zero or discard
// in steps, then lvremove.
type WipeSpec struct {
	VG      string `json:"vg"`
	LV      string `json:"lv"`
	Mode    string `json:"mode"` // "zeroout" or "discard"
	StepMax uint64 `json:"stepMax"`
	// UUID is the lv_uuid of the LV the planner saw under the name; the
	// executor binds its once-only record to it.
	UUID string `json:"uuid,omitempty"`
}

// Lines gives the settings of c as keel plan prints them, one per line
// ("devices/scan_lvs = 1"), in the order scan_lvs, global_filter,
// use_devicesfile, raid_fault_policy.
func (c LVMConfChange) Lines() []string {
	var out []string
	if c.ScanLVs != nil {
		out = append(out, "devices/scan_lvs = "+boolDigit(*c.ScanLVs))
	}
	if c.GlobalFilter != nil {
		out = append(out, "devices/global_filter = "+quoteList(c.GlobalFilter))
	}
	if c.UseDevicesFile != nil {
		out = append(out, "devices/use_devicesfile = "+boolDigit(*c.UseDevicesFile))
	}
	if c.RaidFaultPolicy != "" {
		out = append(out, "activation/raid_fault_policy = "+strconv.Quote(c.RaidFaultPolicy))
	}
	return out
}
