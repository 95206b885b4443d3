package plan

import (
	"fmt"
	"math"
	"strings"
)

// Severity ranks a finding. The zero value is Info.
type Severity int

// Severities, from least to most serious. keel check exits 1 when any finding
// is at Warning or above.
const (
	Info Severity = iota
	Warning
	Error
	Critical
)

var severityNames = [...]string{"info", "warning", "error", "critical"}

// String returns the lowercase name used in every output format.
func (s Severity) String() string {
	if s < 0 || int(s) >= len(severityNames) {
		return fmt.Sprintf("severity(%d)", int(s))
	}
	return severityNames[s]
}

// ParseSeverity reads a severity name as String writes it.
func ParseSeverity(name string) (Severity, error) {
	for i, n := range severityNames {
		if strings.EqualFold(n, name) {
			return Severity(i), nil
		}
	}
	return 0, fmt.Errorf("unknown severity %q", name)
}

// MarshalText writes the severity's name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a severity's name.
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Finding is one difference between the desired state (or, in audit mode,
// the reference rules) and the host. ID is stable across releases and
// documented in docs/findings.md; Object names what it is about, e.g.
// "vdolab/vdopool" or "bcache:<uuid>".
type Finding struct {
	ID       FindingID `json:"id"`
	Severity Severity  `json:"severity"`
	Object   string    `json:"object"`
	Message  string    `json:"message"`
	Expected string    `json:"expected,omitempty"`
	Observed string    `json:"observed,omitempty"`
	Remedy   string    `json:"remedy,omitempty"`
	// Waived is set when a waiver of the desired state accepts the finding;
	// Severity is then info.
	Waived *Waived `json:"waived,omitempty"`
	// Undeclared is set on a finding about a pool the desired state does
	// not declare, judged against the reference rules as keel check
	// --audit judges it (agent.auditUndeclared); it counts at its
	// severity like any other.
	Undeclared bool `json:"undeclared,omitempty"`
}

// Key identifies a finding on one object; alerts are raised and cleared by key.
func (f Finding) Key() string { return string(f.ID) + "@" + f.Object }

// Level is a fill level with its alert threshold: a VDO pool's used
// percent, or a thin pool's data or metadata percent.
type Level struct {
	// Kind is "vdo_used", "thin_data", "thin_metadata", "thin_overprovision"
	// or "raid_sync" (a RAID LV's or md array's part in sync; no alert).
	Kind    string  `json:"kind"`
	Object  string  `json:"object"`
	Percent float64 `json:"percent"`
	// Alert is the threshold from the desired state (or the audit default).
	Alert float64 `json:"alert"`
}

// Ratio is the use from 0 to 1, rounded to a millionth so that 10.06
// percent prints as 0.1006 (LVM and vdostats print two decimals).
func (l Level) Ratio() float64 { return percentRatio(l.Percent) }

// AlertRatio is the alert threshold from 0 to 1.
func (l Level) AlertRatio() float64 { return percentRatio(l.Alert) }

func percentRatio(p float64) float64 { return math.Round(p*1e4) / 1e6 }
