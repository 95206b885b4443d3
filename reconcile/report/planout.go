package report

import (
	"encoding/json"
	"fmt"
	"github.com/keel-storage/keel/lvm/units"
	"github.com/keel-storage/keel/probes/shell"
	"github.com/keel-storage/keel/reconcile/plan"
	"io"
	"slices"
	"strings"
)

// PlanReport is what keel plan prints: the actions keel apply would take,
// in the order it would take them, and the findings they remedy.
type PlanReport struct {
	Host    HostInfo      `json:"host"`
	Actions []plan.Action `json:"actions"`
	// Unremedied lists the keys of findings no action remedies (health
	// findings, report-only drift in audit mode).
	Unremedied []string `json:"unremedied"`
	// Undeclared lists the keys of Unremedied whose finding is on a pool
	// the desired state does not declare (plan.Finding.Undeclared): keel
	// plans nothing for those.
	Undeclared []string `json:"undeclared,omitempty"`
	// observed is what the text shows beside an unremedied finding's key:
	// the uuid and creation time of an LV kept under an absent name, which
	// the operator pins to declare its removal (docs/removal.md).
	observed map[string]string
}

// NewPlanReport builds the plan view of a planner result.
func NewPlanReport(host HostInfo, r plan.Result) PlanReport {
	covered := map[string]bool{}
	for _, a := range r.Actions {
		for _, k := range a.Remedies {
			covered[k] = true
		}
	}
	pr := PlanReport{Host: host, Actions: r.Actions, Unremedied: []string{}}
	if pr.Actions == nil {
		pr.Actions = []plan.Action{}
	}
	fs := append([]plan.Finding(nil), r.Findings...)
	plan.SortFindings(fs)
	for _, f := range fs {
		if !covered[f.Key()] {
			pr.Unremedied = append(pr.Unremedied, f.Key())
			if f.Undeclared {
				pr.Undeclared = append(pr.Undeclared, f.Key())
			}
			if f.ID == plan.LVAbsentReappeared {
				if pr.observed == nil {
					pr.observed = map[string]string{}
				}
				pr.observed[f.Key()] = f.Observed
			}
		}
	}
	return pr
}

// WriteJSON writes the plan as indented JSON.
func (pr PlanReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// A remedy is a shell command: && stays &&, not \u0026.
	enc.SetEscapeHTML(false)
	return enc.Encode(pr)
}

var classHeadings = map[plan.Class]string{
	plan.Live:        "live: applied with the stack in use",
	plan.Maintenance: "maintenance: needs the pool stopped (keel apply --maintenance, VMs on it stopped)",
	plan.Immutable:   "immutable: fixed at creation; the remedy is a rebuild, which keel reports and never attempts",
	plan.Destructive: "destructive: destroys data, only because the desired state asks for it",
}

// WriteText writes the plan grouped by class, with the exact commands,
// sysfs writes, lvm.conf settings and wipes each action performs.
func (pr PlanReport) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "host %s: %s\n", pr.Host.Name, plural(len(pr.Actions), "action"))
	for c := plan.Live; c <= plan.Destructive; c++ {
		first := true
		for _, a := range pr.Actions {
			if a.Class != c {
				continue
			}
			if first {
				fmt.Fprintf(&b, "\n%s\n", classHeadings[c])
				first = false
			}
			fmt.Fprintf(&b, "\n  %s\n    %s\n", a.ID, a.Summary)
			writeSteps(&b, a)
			if len(a.Remedies) > 0 {
				fmt.Fprintf(&b, "    clears: %s\n", strings.Join(a.Remedies, ", "))
			}
		}
	}
	if len(pr.Unremedied) > 0 {
		fmt.Fprintf(&b, "\nfindings no action clears (see keel check):\n")
		for _, k := range pr.Unremedied {
			if slices.Contains(pr.Undeclared, k) {
				fmt.Fprintf(&b, "  %s (undeclared)\n", k)
				continue
			}
			if o := pr.observed[k]; o != "" {
				fmt.Fprintf(&b, "  %s (%s)\n", k, o)
				continue
			}
			fmt.Fprintf(&b, "  %s\n", k)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeSteps(b *strings.Builder, a plan.Action) {
	for _, c := range a.Commands {
		fmt.Fprintf(b, "    $ %s\n", shell.Join(c))
	}
	for _, wr := range a.Writes {
		fmt.Fprintf(b, "    write %s < %s\n", wr.Path, wr.Value)
	}
	if c := a.LVMConf; c != nil {
		for _, l := range c.Lines() {
			fmt.Fprintf(b, "    lvm.conf %s\n", l)
		}
	}
	if wp := a.Wipe; wp != nil {
		fmt.Fprintf(b, "    wipe %s/%s (uuid %s): rename to del-%s, %s in steps of at most %s, lvremove\n",
			wp.VG, wp.LV, wp.UUID, wp.LV, wp.Mode, units.FormatSize(wp.StepMax))
	}
	if a.Kind == plan.KindNone {
		b.WriteString("    (nothing runs)\n")
	}
}
