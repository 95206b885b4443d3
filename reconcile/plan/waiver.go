package plan

import (
	"fmt"

	"github.com/keel-storage/keel/schema/spec"
)

// Waived marks a finding the desired state accepts on purpose (a waiver):
// its severity is lowered to info for counting, exit codes and alerts, and
// the severity it would have is kept here.
type Waived struct {
	Severity Severity `json:"severity"`
	Reason   string   `json:"reason"`
	// Expires is the last day (UTC, YYYY-MM-DD) the waiver holds.
	Expires string `json:"expires"`
}

// String is the text report's line for a waived finding: its own severity,
// the last day and the reason ("" when w is nil).
func (w *Waived) String() string {
	if w == nil {
		return ""
	}
	return fmt.Sprintf("%s, accepted through %s: %s", w.Severity, w.Expires, w.Reason)
}

// waive applies the desired state's waivers to the findings planned so far.
// A waiver in force (Memory.Today on or before its expires; always when
// the caller gave no date) marks the finding with its ID and object as
// waived, lowers it to info and drops the actions that remedy only waived
// findings: keel does not change what the operator accepted. An expired
// waiver raises waiver.expired and waives nothing; a waiver whose ID is not
// in the catalogue raises waiver.unknown. Dates are YYYY-MM-DD, so they
// compare as strings.
func (p *planner) waive() {
	if p.d == nil || len(p.d.Waivers) == 0 {
		return
	}
	inForce := map[string]spec.Waiver{}
	for _, w := range p.d.Waivers {
		key := w.ID + "@" + w.Object
		switch _, known := Lookup(FindingID(w.ID)); {
		case !known:
			p.add(Finding{ID: WaiverUnknown, Object: key,
				Message:  fmt.Sprintf("the desired state waives %s on %s, but keel has no finding %s: it waives nothing", w.ID, w.Object, w.ID),
				Expected: "a finding ID of docs/findings.md", Observed: w.ID,
				Remedy: fmt.Sprintf("correct the id of the waiver for %s in the desired state (keel check prints each finding's ID and object), or remove it", w.Object)})
		case p.mem.Today != "" && p.mem.Today > w.Expires:
			p.add(Finding{ID: WaiverExpired, Object: key,
				Message:  fmt.Sprintf("the waiver of %s on %s expired after %s (%s): the finding counts again", w.ID, w.Object, w.Expires, w.Reason),
				Expected: "on or before " + w.Expires, Observed: p.mem.Today,
				Remedy: fmt.Sprintf("fix %s on %s, or review the reason and move the waiver's expires to a later date in the desired state", w.ID, w.Object)})
		default:
			inForce[key] = w
		}
	}
	waived := map[string]bool{}
	for i := range p.findings {
		f := &p.findings[i]
		w, ok := inForce[f.Key()]
		if !ok {
			continue
		}
		f.Waived = &Waived{Severity: f.Severity, Reason: w.Reason, Expires: w.Expires}
		f.Severity = Info
		waived[f.Key()] = true
	}
	if len(waived) == 0 {
		return
	}
	kept := p.actions[:0]
	for _, pa := range p.actions {
		if len(pa.Remedies) > 0 && allWaived(pa.Remedies, waived) {
			continue
		}
		kept = append(kept, pa)
	}
	p.actions = kept
}

func allWaived(keys []string, waived map[string]bool) bool {
	for _, k := range keys {
		if !waived[k] {
			return false
		}
	}
	return true
}
