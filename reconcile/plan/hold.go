package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/state"
	"github.com/keel-storage/keel/schema/spec"
)

// An operator's hold (keel hold OBJECT --reason … [--until …]; state.Hold)
// stops every action on its object until keel release, or until it lapses:
// storage surgery by hand (a cache drained to writethrough before its SSD
// is pulled, a table swapped during a recovery) must not be undone by keel
// converging the object back. The object is named as keel check prints it
// or as the desired state and the host know it: a VG (its LVs and their
// devices with it), "vg/lv", a device-mapper name, a declared bcache
// device's name, its kernel name (bcache0) or "bcache:<uuid>".

// holdsInForce returns the holds of d and mem in force at mem.Now.
func holdsInForce(d *spec.Config, mem Memory) map[string]state.Hold {
	out := map[string]state.Hold{}
	all, _ := allHolds(d, mem)
	for obj, h := range all {
		if h.InForce(mem.Now) {
			out[obj] = h
		}
	}
	return out
}

// allHolds returns the holds keel hold recorded (mem.Holds) with those the
// desired state lists (d.Holds), by object; a recorded hold wins over an
// entry for the same object. An entry's until is the last day it holds,
// as a waiver's expires is: it lapses at the next midnight UTC. desired
// says which objects only the desired state holds.
func allHolds(d *spec.Config, mem Memory) (holds map[string]state.Hold, desired map[string]bool) {
	if d == nil || len(d.Holds) == 0 {
		return mem.Holds, nil
	}
	holds, desired = maps.Clone(mem.Holds), map[string]bool{}
	if holds == nil {
		holds = map[string]state.Hold{}
	}
	for _, e := range d.Holds {
		if _, ok := holds[e.Object]; ok {
			continue
		}
		h := state.Hold{Reason: e.Reason}
		if day, err := time.Parse(time.DateOnly, e.Until); err == nil {
			h.Until = day.Add(24 * time.Hour)
		}
		holds[e.Object], desired[e.Object] = h, true
	}
	return holds, desired
}

// holdAliases returns every object name the planner may give what obj
// names on h under the desired state d: obj itself, a bcache device's
// "bcache:<uuid>" for its declared name, kernel name or uuid, an LV's
// "vg/lv" for its device-mapper name and the reverse, and a VG's LVs'
// device-mapper names.
func holdAliases(d *spec.Config, h *model.Host, obj string) []string {
	out := []string{obj}
	p := newPlanner(h)
	if d != nil {
		if want, ok := d.Bcache[obj]; ok {
			if b := p.findBcache(want.Backing); b != nil {
				out = append(out, bcacheObject(b.UUID))
			}
		}
	}
	for _, b := range h.Bcache {
		if b.Device == obj || "/dev/"+b.Device == obj || b.UUID == obj {
			out = append(out, bcacheObject(b.UUID))
		}
	}
	for _, lv := range h.LVs {
		switch {
		case lv.DMName != "" && lv.DMName == obj:
			out = append(out, lv.FullName)
		case (lv.VG == obj || lv.FullName == obj) && lv.DMName != "":
			out = append(out, lv.DMName)
		}
	}
	return out
}

// heldBy returns the hold (its object) that holds an action or object
// named object, or "": one of the names it lists (comma-separated, as the
// resume of several suspended devices is) is a held alias, or an LV of a
// held VG ("vg/…").
func heldBy(object string, aliases map[string][]string) string {
	for _, part := range strings.Split(object, ",") {
		for _, obj := range slices.Sorted(maps.Keys(aliases)) {
			for _, a := range aliases[obj] {
				if part == a || strings.HasPrefix(part, a+"/") {
					return obj
				}
			}
		}
	}
	return ""
}

// hold applies the operators' holds to the plan: each hold in force is
// shown (hold.active) and every action on its object becomes a report
// naming it; a lapsed hold is said (hold.expired) and holds nothing.
func (p *planner) hold() {
	holds, desired := allHolds(p.d, p.mem)
	if len(holds) == 0 {
		return
	}
	aliases := map[string][]string{}
	for _, obj := range slices.Sorted(maps.Keys(holds)) {
		h := holds[obj]
		if !h.InForce(p.mem.Now) {
			p.add(Finding{ID: HoldExpired, Object: obj,
				Message:  fmt.Sprintf("the hold on %s lapsed at %s (%s): keel acts on it again", obj, state.Stamp(h.Until), h.Reason),
				Expected: "released by keel release once the work is done", Observed: "lapsed " + state.Stamp(h.Until),
				Remedy: fmt.Sprintf("if the work on it is done: keel release %s; if not: keel hold %s --reason %q --until %s", obj, obj, h.Reason, p.laterDay())})
			if desired[obj] {
				f := &p.findings[len(p.findings)-1]
				f.Remedy = fmt.Sprintf("if the work on it is done, remove the holds entry of %s from the desired state; if not, move its until to a later day", obj)
			}
			continue
		}
		aliases[obj] = holdAliases(p.d, p.h, obj)
		p.add(Finding{ID: HoldActive, Object: obj,
			Message:  fmt.Sprintf("%s is held (%s) until %s: keel changes nothing on it, and its udev rules leave it out", obj, h.Reason, holdEnd(h)),
			Expected: "not held", Observed: "held since " + state.Stamp(h.Since),
			Remedy: "once the work on it is done: keel release " + obj})
		if desired[obj] {
			f := &p.findings[len(p.findings)-1]
			f.Observed = "held by the desired state's holds"
			f.Remedy = "once the work on it is done, remove the holds entry of " + obj + " from the desired state"
		}
	}
	for i := range p.actions {
		a := &p.actions[i].Action
		obj := heldBy(a.Object, aliases)
		if obj == "" || a.Kind == KindNone {
			continue
		}
		h := holds[obj]
		*a = Action{ID: a.ID, Kind: KindNone, Class: Immutable, Object: a.Object,
			Summary:  fmt.Sprintf("held by keel hold %s (%s, until %s); would %s", obj, h.Reason, holdEnd(h), a.Summary),
			Remedies: a.Remedies}
	}
}

// holdEnd is when a hold ends, as messages say it.
func holdEnd(h state.Hold) string {
	if h.Until.IsZero() {
		return "keel release"
	}
	return state.Stamp(h.Until)
}

// laterDay is a date a week after Memory.Now, for the remedy of a lapsed
// hold ("+7d" parses too; a date is what keel hold prints back).
func (p *planner) laterDay() string {
	return p.mem.Now.Add(7 * 24 * time.Hour).UTC().Format(time.DateOnly)
}

// HeldBcache returns, by declared name, the bcache devices of d that a hold
// of mem in force holds on h, with the hold's reason: keel's bcache udev
// rule leaves them out (activation.RulesHeld), so that a "change" uevent
// or a registration does not write their tunables back either.
func HeldBcache(d *spec.Config, h *model.Host, mem Memory) map[string]string {
	holds := holdsInForce(d, mem)
	if d == nil || h == nil || len(holds) == 0 || len(d.Bcache) == 0 {
		return nil
	}
	aliases := map[string][]string{}
	for obj := range holds {
		aliases[obj] = holdAliases(d, h, obj)
	}
	p := newPlanner(h)
	out := map[string]string{}
	for name, want := range d.Bcache {
		obj := heldBy(name, aliases)
		if b := p.findBcache(want.Backing); obj == "" && b != nil {
			obj = heldBy(bcacheObject(b.UUID), aliases)
		}
		if obj != "" {
			out[name] = fmt.Sprintf("held by keel hold %s: %s, until %s", obj, holds[obj].Reason, holdEnd(holds[obj]))
		}
	}
	return out
}
