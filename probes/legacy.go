package probes

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Snapshots recorded before fullReportCmd named its fields asked for the
// whole LV and segment sets.
const (
	legacyLVOptions  = "lv_all,vg_name"
	legacySegOptions = "seg_all,lv_uuid,lv_name,vg_name"
)

// legacyReportCmd is c, a report built from fullReportCmd (the report
// itself, its retry without failed fields, either limited with --devices),
// as keel built it before fullReportCmd named its fields: with seg_all,
// and with lv_all where c asks for reportLVFields. ok is false for any
// other command. Replay looks a command up this way when the snapshot
// does not hold it, so that snapshots recorded then still replay: their
// rows carry more fields, which the parser keeps (LV.Fields).
func legacyReportCmd(c Cmd) (Cmd, bool) {
	if c.Name != "lvm" || len(c.Args) == 0 || c.Args[0] != "fullreport" {
		return Cmd{}, false
	}
	args := slices.Clone(c.Args)
	changed := false
	for i := 0; i+3 < len(args); i++ {
		if args[i] != "--configreport" || args[i+2] != "-o" {
			continue
		}
		switch {
		case args[i+1] == "lv" && args[i+3] == strings.Join(reportLVFields, ","):
			args[i+3], changed = legacyLVOptions, true
		case args[i+1] == "seg" && args[i+3] == strings.Join(reportSegFields, ","):
			args[i+3], changed = legacySegOptions, true
		}
	}
	if !changed {
		return Cmd{}, false
	}
	c.Args = args
	return c, true
}

// NarrowLegacyReport rewrites s, a snapshot recorded while the report
// asked for lv_all and seg_all, into the one keel records now: the report
// under fullReportCmd's argv, each LV and segment row with only the fields
// fullReportCmd names, in that order. Tests use it to show that the fields
// keel asks for give the same host and the same plan as every field did.
// ok is false when s holds no such report; an error means a row lacks a
// field keel asks for (an LVM that does not know it) or the report does not
// decode.
func NarrowLegacyReport(s *Snapshot) (ok bool, err error) {
	old, _ := legacyReportCmd(fullReportCmd)
	rec, found := s.Commands[old.String()]
	if !found {
		return false, nil
	}
	var rep struct {
		Report []map[string][]json.RawMessage `json:"report"`
		Log    json.RawMessage                `json:"log,omitempty"`
	}
	if err := json.Unmarshal(rec.Result.Stdout, &rep); err != nil {
		return false, fmt.Errorf("snapshot: %s: %w", old, err)
	}
	keep := map[string][]string{"lv": reportLVFields, "seg": reportSegFields}
	for _, el := range rep.Report {
		for sub, names := range keep {
			for i, raw := range el[sub] {
				var row map[string]string
				if err := json.Unmarshal(raw, &row); err != nil {
					return false, fmt.Errorf("snapshot: %s: %s row %d: %w", old, sub, i, err)
				}
				var b strings.Builder
				b.WriteByte('{')
				for j, f := range names {
					v, ok := row[f]
					if !ok {
						return false, fmt.Errorf("snapshot: %s: %s row %d has no field %s", old, sub, i, f)
					}
					if j > 0 {
						b.WriteByte(',')
					}
					k, _ := json.Marshal(f)
					val, _ := json.Marshal(v)
					b.Write(k)
					b.WriteByte(':')
					b.Write(val)
				}
				b.WriteByte('}')
				el[sub][i] = json.RawMessage(b.String())
			}
		}
	}
	out, err := json.Marshal(rep)
	if err != nil {
		return false, fmt.Errorf("snapshot: %s: %w", old, err)
	}
	delete(s.Commands, old.String())
	rec.Argv = fullReportCmd.Argv()
	rec.Result.Stdout = out
	s.Commands[fullReportCmd.String()] = rec
	return true, nil
}
