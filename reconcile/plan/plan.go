package plan

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/plan/removal"
	"github.com/keel-storage/keel/schema/spec"
)

// Result is what the planner concludes about one host: the findings, the
// actions that remedy them, and the fill levels with their alert
// thresholds. Findings and actions come in a deterministic order.
type Result struct {
	Findings []Finding
	Actions  []Action
	Levels   []Level
	// NotEvaluated lists catalogue IDs this pass could not judge (keel's
	// udev rules files when the probe could not read them, and always in
	// an audit, which has no desired state to generate them from): absent
	// from Findings does not mean passed for these.
	NotEvaluated []FindingID
}

// Plan compares the desired state with the observed host and returns what
// differs and what to do. It is a pure function: it runs nothing, reads no
// file and no clock, and takes every host fact (CPU count, memory, extents)
// from the observed model. A nil desired state plans nothing; use Audit to
// judge a host without one. It has no records of keel's state: an LV
// under an absent name is judged as on keel's first reading of that host,
// which sees every absent name for the first time (Memory.FirstPass).
func Plan(desired *spec.Config, host *model.Host) Result {
	return plan(desired, host, Memory{FirstPass: true})
}

func plan(desired *spec.Config, host *model.Host, mem Memory) Result {
	if desired == nil || host == nil {
		return Result{}
	}
	p := newPlanner(host)
	p.d, p.mem = desired, mem
	p.planSuspended()
	p.planLVMConf()
	p.planDevicesFile()
	p.planLockd()
	p.planSharedAutoactivation()
	for _, name := range slices.Sorted(maps.Keys(desired.VolumeGroups)) {
		p.planVG(name, desired.VolumeGroups[name])
	}
	p.planUnrecorded()
	p.planDataVDO()
	p.planStaleProfiles()
	p.auditUndeclared()
	p.planRAID()
	for _, name := range slices.Sorted(maps.Keys(desired.Bcache)) {
		p.planBcache(name, desired.Bcache[name])
	}
	p.planVDOMemory()
	p.planStacking()
	p.planUdevRules()
	p.waive()
	p.hold()
	return p.result()
}

// Audit judges the host against keel's reference rules without a desired
// state: the sweep a fleet needs before anyone writes one ("none of it is
// the default": LVM's ten VDO threads, max_discard 1, overcommitted VDO,
// MiB thin chunks, zeroing on, bcache defaults, scan_lvs and the filter).
// Audit findings carry remedies but no actions: without a desired state
// there is nothing keel is allowed to change.
func Audit(host *model.Host) Result {
	if host == nil {
		return Result{}
	}
	p := newPlanner(host)
	p.audit = true
	p.planSuspended()
	p.auditLVMConf()
	p.planDevicesFile()
	p.planLockd()
	p.planSharedAutoactivation()
	for _, key := range slices.Sorted(maps.Keys(host.VDOPools)) {
		p.auditVDO(host.VDOPools[key])
	}
	for _, key := range slices.Sorted(maps.Keys(host.ThinPools)) {
		p.auditThin(host.ThinPools[key])
	}
	for _, uuid := range slices.Sorted(maps.Keys(host.Bcache)) {
		p.auditBcache(host.Bcache[uuid])
	}
	p.planRAID()
	p.planVDOMemory()
	p.planStacking()
	p.notEvaluated = append(p.notEvaluated, udevRuleIDs...)
	return p.result()
}

// planner accumulates one pass. Its methods only read d and h.
type planner struct {
	d     *spec.Config
	h     *model.Host
	mem   Memory
	audit bool

	findings     []Finding
	actions      []plannedAction
	levels       []Level
	notEvaluated []FindingID
	// pvIndex maps every name a PV is known by (LVM name, kernel name,
	// /dev/disk/by-id path, /dev/mapper path) to its LVM name.
	pvIndex map[string]string
	// lvByDM maps device-mapper names to LVs.
	lvByDM map[string]*model.LV
	// stacked caches stackedVGs.
	stacked map[string][]string
	// vdoSeen caches observeVDO by "vg/pool|lv".
	vdoSeen map[string]observedVDO
	// lvKeys caches sortedLVKeys; pvmoves holds the pvmove LVs in that
	// order once planPvmove has looked for them.
	lvKeys  []string
	pvmoves []*model.LV
	// heldVGs are the declared VGs that are not the declared ones
	// (vgHeld): no action is planned on them.
	heldVGs map[string]bool
	// clearing is how removal clears each LV, read once when an absent LV
	// is found (planAbsent).
	clearing *removal.Clearing
	// shared caches sharedVGs: the VGs no action may change (holdShared).
	shared map[string]removal.SharedVG
	// profiles are the autoextend profiles this pass keeps (written or
	// attached by planAutoextend), which planStaleProfiles never removes.
	profiles map[string]bool
}

// sortedLVKeys returns the keys of the host's LVs in order, sorted once per
// plan: the per-VG steps that walk every LV (planPvmove, once per VG) would
// otherwise sort all of them again for each VG, which at 10,000 LVs in 64
// VGs made the plan 45 times slower.
func (p *planner) sortedLVKeys() []string {
	if p.lvKeys == nil {
		p.lvKeys = lvKeysByVG(p.h)
		if p.lvKeys == nil {
			p.lvKeys = slices.Sorted(maps.Keys(p.h.LVs))
		}
	}
	return p.lvKeys
}

// lvKeysByVG returns the keys of h's LVs in order from the VGs' LV lists,
// which the probe sorts, without sorting them all again: "vg/lv" keys of
// two VGs compare as the VGs' names followed by "/" do, since no VG name
// holds a "/" (so neither "A/" is a prefix of "B/"). It returns nil, and
// the caller sorts, when the lists are not exactly the host's LVs, each
// sorted.
func lvKeysByVG(h *model.Host) []string {
	vgs := slices.SortedFunc(maps.Keys(h.VGs), func(a, b string) int { return strings.Compare(a+"/", b+"/") })
	keys := make([]string, 0, len(h.LVs))
	for _, vg := range vgs {
		lvs := h.VGs[vg].LVs
		for i, k := range lvs {
			_, ok := h.LVs[k]
			if !ok || !strings.HasPrefix(k, vg) || len(k) == len(vg) || k[len(vg)] != '/' || i > 0 && lvs[i-1] >= k {
				return nil
			}
		}
		keys = append(keys, lvs...)
	}
	if len(keys) != len(h.LVs) {
		return nil
	}
	return keys
}

// plannedAction carries the ordering phase next to the action.
type plannedAction struct {
	phase int
	Action
}

// Action phases: the order actions run in within one class.
const (
	phaseLVMConf    = 0  // lvm.conf first: later steps may need scan_lvs
	phaseCreateVG   = 10 // + phaseStacked for a VG on an LV
	phaseCreateVDO  = 11
	phaseCreateThin = 12
	phaseStacked    = 20
	phaseChange     = 50
)

func newPlanner(h *model.Host) *planner {
	p := &planner{h: h, pvIndex: map[string]string{}, lvByDM: make(map[string]*model.LV, len(h.LVs)),
		vdoSeen: map[string]observedVDO{}}
	for _, lv := range h.LVs {
		if lv.DMName != "" {
			p.lvByDM[lv.DMName] = lv
		}
	}
	for name, pv := range h.PVs {
		p.pvIndex[name] = name
		if pv.Device != "" {
			p.pvIndex["/dev/"+pv.Device] = name
		}
		for _, id := range pv.ByID {
			p.pvIndex[id] = name
			p.pvIndex["/dev/disk/by-id/"+strings.TrimPrefix(id, "/dev/disk/by-id/")] = name
		}
		// A PV on an LV is known as /dev/<vg>/<lv> and /dev/mapper/<dm name>.
		if lv := p.lvOfPV(pv); lv != nil {
			p.pvIndex["/dev/"+lv.FullName] = name
			p.pvIndex["/dev/mapper/"+lv.DMName] = name
		}
	}
	return p
}

// add records f with its catalogue severity and returns its key.
func (p *planner) add(f Finding) string {
	f.Severity = f.ID.Severity()
	p.findings = append(p.findings, f)
	return f.Key()
}

// act records an action unless in audit mode, in a VG keel holds, on a
// host with suspended devices, or on an object of a VG shared between
// nodes: every plan function goes through it, so an action is gated on
// shared VGs by default (holdShared).
func (p *planner) act(phase int, a Action) {
	if p.audit || p.inHeldVG(a.Object) {
		return
	}
	if len(p.h.Suspended) > 0 && !strings.HasPrefix(a.ID, "dm.suspended:") {
		// LVM read the host without the suspended devices (planSuspended):
		// nothing else is acted on from that view, and a command could
		// block on them.
		return
	}
	if p.holdShared(a) {
		return
	}
	p.actions = append(p.actions, plannedAction{phase, a})
}

// reportOnly records a KindNone action of class Immutable for drift keel
// will never try to change.
func (p *planner) reportOnly(id FindingID, object, summary string, remedies ...string) {
	p.act(phaseChange, Action{ID: string(id) + ":" + object, Kind: KindNone, Class: Immutable, Object: object,
		Summary: summary, Remedies: remedies})
}

func (p *planner) level(kind, object string, percent, alert float64) {
	if percent < 0 {
		return
	}
	// Two decimals, as LVM reports data_percent.
	percent = math.Round(percent*100) / 100
	p.levels = append(p.levels, Level{Kind: kind, Object: object, Percent: percent, Alert: alert})
}

func (p *planner) result() Result {
	SortFindings(p.findings)
	sort.SliceStable(p.actions, func(i, j int) bool {
		a, b := p.actions[i], p.actions[j]
		if a.Class != b.Class {
			return a.Class < b.Class
		}
		if a.phase != b.phase {
			return a.phase < b.phase
		}
		return a.ID < b.ID
	})
	r := Result{Findings: p.findings, Levels: p.levels, NotEvaluated: p.notEvaluated}
	for _, a := range p.actions {
		r.Actions = append(r.Actions, a.Action)
	}
	sort.SliceStable(r.Levels, func(i, j int) bool {
		if r.Levels[i].Kind != r.Levels[j].Kind {
			return r.Levels[i].Kind < r.Levels[j].Kind
		}
		return r.Levels[i].Object < r.Levels[j].Object
	})
	return r
}

// resolvePV returns the LVM name of the PV a desired path names, or "".
func (p *planner) resolvePV(path string) string {
	return p.pvIndex[path]
}

// isLVPath reports whether a desired PV path names an LV ("/dev/vg/lv" or
// "/dev/mapper/vg-lv") rather than a disk, and returns the LV's "vg/lv".
func (p *planner) isLVPath(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/dev/")
	if !ok {
		return "", false
	}
	if m, ok := strings.CutPrefix(rest, "mapper/"); ok {
		if lv := p.lvByDM[m]; lv != nil {
			return lv.FullName, true
		}
		return "", false
	}
	if strings.Count(rest, "/") != 1 || strings.HasPrefix(rest, "disk/") {
		return "", false
	}
	if _, ok := p.h.LVs[rest]; ok {
		return rest, true
	}
	// An LV that does not exist yet: "/dev/<vg>/<lv>" where <vg> is declared.
	if p.d != nil {
		if _, ok := p.d.VolumeGroups[lvm.Split(rest).VG]; ok {
			return rest, true
		}
	}
	return "", false
}

func yn(b bool) string {
	if b {
		return "y"
	}
	return "n"
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func pct(v float64) string { return fmt.Sprintf("%.2f%%", v) }
