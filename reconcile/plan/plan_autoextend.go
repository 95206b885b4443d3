package plan

import (
	"fmt"
	"path"
	"strings"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/lvm/units"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/probes/shell"
	"github.com/keel-storage/keel/schema/spec"
)

// Autoextend within bounds. lvm2 grows a monitored pool itself: dmeventd's
// thin and VDO plugins (daemons/dmeventd/plugins/thin, .../vdo) watch the
// pool's use and, past the threshold, run lvextend --use-policies, which
// extends the pool by activation/thin_pool_autoextend_percent (or
// vdo_pool_autoextend_percent) of its current size once its use passes
// activation/thin_pool_autoextend_threshold (vdo_pool_autoextend_threshold);
// a threshold of 100 turns it off (lvm.conf(5); lvmthin(7) and lvmvdo(7),
// "Automatic extend settings"). Both settings may come from a metadata
// profile attached to the pool (lvchange --metadataprofile NAME reads
// /etc/lvm/profile/NAME.profile; lvm.conf(5) config/profile_dir,
// lvmthin(7)), which is how keel applies a per-pool policy without
// touching lvm.conf: it writes one profile per pool and policy state and
// attaches it.
//
// LVM cannot express a ceiling. keel enforces the declared maximum by
// attaching the pool's "off" profile (threshold 100) once the next step
// at the declared percent would pass it, and reports the pool at its
// maximum. Each profile's name carries its settings, so that a change of
// policy is a change of the name in the VG's metadata, which every lvm2
// command re-reads, rather than of a file a long-running dmeventd might
// have loaded. lvextend --use-policies may take a larger step than the
// percent when the use is already far past the threshold (enough to get
// below it, _adjust_amount in lib/metadata/lv_manip.c): such a step can
// pass the maximum; keel then reports the pool at its maximum and never
// shrinks it.

// autoextendKind names the LVM settings of a pool kind's policy.
type autoextendKind struct {
	what string // "thin pool", "VDO pool"
	key  string // the activation/ settings' prefix
}

var (
	thinAutoextend = autoextendKind{"thin pool", "thin_pool_autoextend"}
	vdoAutoextend  = autoextendKind{"VDO pool", "vdo_pool_autoextend"}
)

// autoextendPool is what the autoextend plan reads of one pool.
type autoextendPool struct {
	object  string // "vg/pool"
	size    uint64 // the size lvextend --use-policies takes a percent of
	minStep uint64 // the smallest extension lvm2 makes (VDO: one slab)
	active  bool
	monitor string // seg_monitor
	profile string // lv_profile
}

// autoextendStep is the size after one step of pct percent from size, in
// lvm2's arithmetic: pct percent of the LV's extents, rounded up to a
// whole extent (lvresize's percent of the LV, _lvresize_adjust_extents),
// at least minStep.
func autoextendStep(size, extent, minStep uint64, pct int) uint64 {
	if extent == 0 {
		extent = defaultExtentBytes
	}
	les := size / extent
	add := (les*uint64(pct) + 99) / 100 * extent
	return size + max(add, roundUpExtent(minStep, extent))
}

// autoextendProfile returns the name and the content of the LVM metadata
// profile keel attaches to pool object (vg/pool) for policy a of kind k;
// off is the profile that turns autoextend off (threshold 100).
func autoextendProfile(k autoextendKind, object string, a spec.Autoextend, off bool) (name, content string) {
	base := model.KeelProfilePrefix + lvm.Split(object).DMName()
	threshold, pct := a.Threshold, a.Percent
	if off {
		name, threshold = base+"-off", 100
	} else {
		name = fmt.Sprintf("%s-t%d-p%d", base, a.Threshold, a.Percent)
	}
	content = fmt.Sprintf(`# Written by keel: the autoextend policy of %s %s (the desired state's
# autoextend). Do not edit: keel writes it again.
activation {
	%s_threshold = %d
	%s_percent = %d
}
`, k.what, object, k.key, threshold, k.key, pct)
	return name, content
}

// autoextendProfilePath is where LVM reads profile name.
func autoextendProfilePath(name string) string {
	return path.Join(model.LVMProfileDir, name+".profile")
}

// planAutoextend applies policy a to pool o: the profile of its state
// written and attached, monitoring on, and the maximum enforced.
func (p *planner) planAutoextend(k autoextendKind, o autoextendPool, a *spec.Autoextend) {
	if a == nil || o.size == 0 {
		return
	}
	vg := lvm.Split(o.object).VG
	extent := p.vgExtent(vg)
	maxBytes := roundUpExtent(a.Maximum.Bytes, extent)
	next := autoextendStep(o.size, extent, o.minStep, a.Percent)
	off := next > maxBytes
	name, content := autoextendProfile(k, o.object, *a, off)
	file := autoextendProfilePath(name)
	if p.profiles == nil {
		p.profiles = map[string]bool{}
	}
	p.profiles[name] = true
	if off {
		f := Finding{ID: AutoextendAtMaximum, Object: o.object,
			Message: fmt.Sprintf("%s %s is %s: its next autoextend step (%s) would take it to %s, past its maximum %s, so keel turned autoextend off (profile %s)",
				k.what, o.object, units.FormatSize(o.size), stepText(a.Percent, o.minStep), units.FormatSize(next), a.Maximum, name),
			Expected: "room for its next step within " + units.FormatSize(maxBytes), Observed: units.FormatSize(o.size),
			Remedy: fmt.Sprintf("declare a larger autoextend maximum for %s (%q lets it take the next step), or free space in it (fstrim, discard)", o.object, units.LVMArg(next)),
		}
		if o.size > maxBytes {
			f.Message = fmt.Sprintf("%s %s is %s, above its autoextend maximum %s (an extension lvm2 sized past the threshold, or a manual one): keel turned autoextend off (profile %s) and never shrinks a pool",
				k.what, o.object, units.FormatSize(o.size), a.Maximum, name)
		}
		p.add(f)
	}
	var drift []string
	var fileAct *Action
	known, observed := p.keelFile(file)
	if known && observed != content {
		state := "differs"
		if observed == "" {
			state = "is missing"
		}
		drift = append(drift, fmt.Sprintf("profile %s %s", file, state))
		fileAct = &Action{ID: "autoextend.policy:" + o.object, Kind: KindFile, Class: Live, Object: o.object,
			Summary: fmt.Sprintf("write LVM profile %s (%s)", file, policyText(k, *a, off)),
			Files:   []FileWrite{{Path: file, Content: content, Mode: 0o644}}}
	}
	attach := []string{"lvchange", "--metadataprofile", name, o.object}
	if o.profile != name {
		observed := "no profile"
		if o.profile != "" {
			observed = "profile " + o.profile
		}
		drift = append(drift, fmt.Sprintf("the pool has %s attached, not %s", observed, name))
	}
	if len(drift) > 0 {
		remedy := shell.Join(attach)
		if fileAct != nil {
			remedy = "keel apply (writes " + file + ", then runs " + remedy + ")"
		}
		key := p.add(Finding{ID: AutoextendPolicy, Object: o.object,
			Message:  fmt.Sprintf("the autoextend policy of %s %s is not applied: %s", k.what, o.object, strings.Join(drift, "; ")),
			Expected: "profile " + name + " (" + policyText(k, *a, off) + ")", Observed: profileText(o.profile),
			Remedy: remedy,
		})
		// One action: the executor verifies each by the findings it
		// clears, and the profile is in force only once written and
		// attached. A KindFile action runs its commands after its writes.
		act := Action{ID: "autoextend.policy:" + o.object, Kind: KindCommand, Class: Live, Object: o.object,
			Summary:  fmt.Sprintf("attach profile %s to %s (%s)", name, o.object, policyText(k, *a, off)),
			Commands: [][]string{attach}, Remedies: []string{key}}
		if fileAct != nil {
			act = *fileAct
			act.Remedies = []string{key}
			if o.profile != name {
				act.Summary += ", attach it to " + o.object
				act.Commands = [][]string{attach}
			}
		}
		p.act(phaseChange, act)
	}
	// seg_monitor is "" for an inactive pool and in a snapshot captured
	// before keel read it: nothing to judge.
	if o.active && o.monitor != "" && o.monitor != "monitored" && !off {
		monitor := []string{"lvchange", "--monitor", "y", o.object}
		key := p.add(Finding{ID: AutoextendUnmonitored, Object: o.object,
			Message: fmt.Sprintf("%s %s has an autoextend policy but dmeventd does not monitor it (seg_monitor %q): nothing extends it",
				k.what, o.object, o.monitor),
			Expected: "monitored", Observed: o.monitor,
			Remedy: shell.Join(monitor),
		})
		p.act(phaseChange+1, Action{ID: "autoextend.monitor:" + o.object, Kind: KindCommand, Class: Live, Object: o.object,
			Summary:  "have dmeventd monitor " + o.object,
			Commands: [][]string{monitor}, Remedies: []string{key}})
	}
}

// keelFile returns the content of file, one of the LVM profiles keel
// writes, as the host has it ("" when missing); known is false when the
// pass could not read LVM's profile directory or the file.
func (p *planner) keelFile(file string) (known bool, content string) {
	if f := p.h.KeelFiles[file]; f != nil {
		return f.Unknown == "", f.Content
	}
	dir := p.h.KeelFiles[model.LVMProfileDir]
	return dir != nil && dir.Unknown == "", ""
}

func policyText(k autoextendKind, a spec.Autoextend, off bool) string {
	if off {
		return "autoextend off: at its maximum " + a.Maximum.Text
	}
	return fmt.Sprintf("%s_threshold %d, %s_percent %d, maximum %s", k.key, a.Threshold, k.key, a.Percent, a.Maximum.Text)
}

// stepText says how lvm2 sizes one autoextend step.
func stepText(pct int, minStep uint64) string {
	if minStep > 0 {
		return fmt.Sprintf("%d%% in whole extents, at least %s for a new VDO slab", pct, units.FormatSize(minStep))
	}
	return fmt.Sprintf("%d%% in whole extents", pct)
}

func profileText(s string) string {
	if s == "" {
		return "no profile"
	}
	return "profile " + s
}

// autoextendAllows reports whether size, above a pool's declared size, is
// within its autoextend maximum: autoextend grew it, and the declared size
// is the size the pool starts from.
func (p *planner) autoextendAllows(vg string, a *spec.Autoextend, size uint64) bool {
	return a != nil && size <= roundUpExtent(a.Maximum.Bytes, p.vgExtent(vg))
}
