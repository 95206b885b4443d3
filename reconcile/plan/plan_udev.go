package plan

import (
	"fmt"

	"github.com/keel-storage/keel/reconcile/activation"
)

// udevRuleIDs are the finding IDs of keel's two generated udev rules files.
var udevRuleIDs = []FindingID{ActivationUdevRule, BcacheUdevRule}

// phaseUdevRules puts the rules last among the live actions: they name the
// LVs and bcache devices the earlier actions create.
const phaseUdevRules = 90

// phaseBcacheRule puts the bcache rule before the tunables it carries (they
// are planned at phaseChange). The rule applies on every "change" uevent of
// a bcache device, and udev synthesizes one whenever a process closes the
// device after writing to it (OPTIONS+="watch", udev(7)): LVM committing
// metadata to a PV on bcache0 is enough. Written after the tunables, the old
// rule can put the old values back in between (the likely cause of
// e2e/underfire's two writes of writeback_percent that read back as the old
// value before the third held; e2e/apply saw the rule do it after a
// vgremove on bcache0).
const phaseBcacheRule = phaseChange - 1

// planUdevRules judges keel's generated udev rules files against what the
// desired state and the host generate (activation.Rules). A file the probe
// could not read, or that a replayed snapshot did not record, is not judged:
// its ID goes to NotEvaluated. The PV rule's rewrite is planned only when no
// other action of this pass creates something: it names each lower LV by its
// device-mapper UUID, which exists only after creation, and a rule written
// from a half-built stack would be stale at once. The next pass writes it.
// The bcache rule does not wait.
func (p *planner) planUdevRules() {
	files, err := activation.RulesHeld(p.d, p.h, p.bcacheDevice, HeldBcache(p.d, p.h, p.mem))
	if err != nil {
		// Order rejects a cycle in the stacking graph, which the schema's
		// checks already refuse; say so rather than judge the file.
		p.add(Finding{ID: ActivationUdevRule, Object: "udev:" + activation.PVScanRule,
			Message:  fmt.Sprintf("udev rules cannot be generated: %v", err),
			Expected: "generated", Observed: "error",
			Remedy: "fix the desired state's stacking",
		})
		return
	}
	var unknown []FindingID
	read := func(path string) ([]byte, error) {
		f := p.h.KeelFiles[path]
		if f == nil || f.Missing {
			return nil, fmt.Errorf("%s: missing", path)
		}
		return []byte(f.Content), nil
	}
	var judged []activation.RuleFile
	for _, f := range files {
		if kf := p.h.KeelFiles[f.Path]; kf == nil || kf.Unknown != "" {
			unknown = append(unknown, UdevRuleID(f.Path))
			continue
		}
		judged = append(judged, f)
	}
	p.notEvaluated = append(p.notEvaluated, unknown...)
	drift := activation.Compare(judged, read)
	if len(drift) == 0 {
		return
	}
	creating := false
	for _, a := range p.actions {
		if a.phase >= phaseCreateVG && a.phase < phaseChange && a.Class == Live {
			creating = true
		}
	}
	for _, d := range drift {
		observed := "differs"
		if d.Missing {
			observed = "missing"
		}
		// Only the PV rule waits: the bcache rule names each cached device
		// by its backing device's bcache UUID, which no creation changes,
		// and a creation on a cached VG commits LVM metadata to the bcache
		// device, whose "change" uevent would make the old rule put the
		// old tunables back (see phaseBcacheRule).
		wait := creating && d.File.Path != activation.BcacheRule
		remedy := "keel apply (or keel udev-rules --write)"
		if wait {
			remedy = "keel apply again after the stack is created (the rule names the created LVs and devices)"
		}
		key := p.add(Finding{ID: UdevRuleID(d.File.Path), Object: "udev:" + d.File.Path,
			Message:  d.Message(),
			Expected: "generated from the desired state", Observed: observed,
			Remedy: remedy,
		})
		if wait {
			continue
		}
		phase := phaseUdevRules
		if d.File.Path == activation.BcacheRule {
			phase = phaseBcacheRule
		}
		p.act(phase, Action{
			ID:       string(UdevRuleID(d.File.Path)) + ":" + d.File.Path,
			Kind:     KindFile,
			Class:    Live,
			Object:   "udev:" + d.File.Path,
			Summary:  fmt.Sprintf("write %s and reload udev's rules", d.File.Path),
			Files:    []FileWrite{{Path: d.File.Path, Content: d.File.Content, Mode: 0o644}},
			Commands: [][]string{UdevReload},
			Remedies: []string{key},
		})
	}
}

// UdevReload tells systemd-udevd to read its rules files again, waiting at
// most 5 s for its answer instead of udevadm's 60 (udevadm(8), control
// --timeout). Without it a rule written by keel still goes live, but late:
// udevd compares the rules files' stats before it starts a queued event,
// at most every 3 s (systemd v257, src/udev/udev-manager.c, manager_reload
// from event_queue_start, udev_rules_should_reload), so an event it starts
// within 3 s of its last look runs the old rule. When udevd is too busy to
// answer (a flood of uevents) the rule applies from its next look, and the
// executor does not count the reload's failure against the action
// (KindFile).
var UdevReload = []string{"udevadm", "control", "--reload", "--timeout=5"}

// UdevSettle waits, at most 3 s, until systemd-udevd has no event queued or
// running (udevadm(8), settle): after UdevReload, every event that may
// still run an old rule has ended. Under a flood of uevents the queue is
// never empty, and it waits the whole 3 s.
var UdevSettle = []string{"udevadm", "settle", "--timeout=3"}

// UdevRuleID returns the finding ID of one of keel's udev rules files:
// BcacheUdevRule for activation.BcacheRule, ActivationUdevRule for the
// PV-scan rule.
func UdevRuleID(path string) FindingID {
	if path == activation.BcacheRule {
		return BcacheUdevRule
	}
	return ActivationUdevRule
}

// bcacheDevice is the activation.Resolver of the planner: the kernel name
// of the registered bcache backing device a declared path names, found the
// way planBcache finds it (by-id links, PV names, kernel names).
func (p *planner) bcacheDevice(path string) string {
	if b := p.findBcache(path); b != nil {
		return b.Backing
	}
	return ""
}
