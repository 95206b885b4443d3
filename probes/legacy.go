package probes

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/keel-storage/keel/probes/hostio"
)

// A snapshot recorded while keel's LVM report asked for lv_all and seg_all
// replays with the report keel asks for now, each LV and segment row cut to
// the fields it names (narrowLegacyReport), so that a replay reads what
// keel reads on a live host. A report that failed, or whose rows lack a
// field keel asks for now, stays as recorded; Replay still finds it
// (legacyReportCmd). The process layer knows no LVM command: the probe
// registers the migration with it.
func init() {
	hostio.RegisterMigration(hostio.Migration{Snapshot: narrowLegacyReport, Cmd: legacyReportCmd})
}

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
func legacyReportCmd(c hostio.Cmd) (hostio.Cmd, bool) {
	return rewriteReportOptions(c, func(sub, options string) (string, bool) {
		switch {
		case sub == "lv" && options == reportLVOptions:
			return legacyLVOptions, true
		case sub == "seg" && options == reportSegOptions:
			return legacySegOptions, true
		}
		return "", false
	})
}

// rewriteReportOptions is c, a report built from fullReportCmd, as an
// older keel built it: the field list of each subreport (--configreport
// SUB -o OPTIONS) replaced by what to returns for it, and every row
// asked for (withoutSelections), as every keel did before segSelect and
// pvSegNone. ok is false for any other command, or when neither changed
// it.
func rewriteReportOptions(c hostio.Cmd, to func(sub, options string) (string, bool)) (hostio.Cmd, bool) {
	if c.Name != "lvm" || len(c.Args) == 0 || c.Args[0] != "fullreport" {
		return hostio.Cmd{}, false
	}
	args := slices.Clone(c.Args)
	changed := false
	for i := 0; i+3 < len(args); i++ {
		if args[i] != "--configreport" || args[i+2] != "-o" {
			continue
		}
		if o, ok := to(args[i+1], args[i+3]); ok {
			args[i+3], changed = o, true
		}
	}
	args, all := withoutSelections(args)
	if !changed && !all {
		return hostio.Cmd{}, false
	}
	c.Args = args
	return c, true
}

// legacyPVSegOptions is the pvseg subreport's field list of the reports
// keel asked for before pvSegNone, with no selection: every PV segment.
const legacyPVSegOptions = "pvseg_all,pv_name,lv_uuid"

// withoutSelections is args, a report's arguments built from
// fullReportCmd, as keel asked before its subreports selected rows: the
// segment subreport without segSelect, and the pvseg subreport with
// legacyPVSegOptions in place of pvSegNone. ok is false, and args
// unchanged, when args have neither selection.
func withoutSelections(args []string) ([]string, bool) {
	out := make([]string, 0, len(args))
	found := 0
	for i := 0; i < len(args); i++ {
		if i+5 < len(args) && args[i] == "--configreport" && args[i+2] == "-o" && args[i+4] == "-S" {
			switch {
			case args[i+1] == "seg" && args[i+5] == segSelect:
				out, i, found = append(out, args[i:i+4]...), i+5, found+1
				continue
			case args[i+1] == "pvseg" && args[i+3] == pvSegNone[0] && args[i+5] == pvSegNone[1]:
				out, i, found = append(out, "--configreport", "pvseg", "-o", legacyPVSegOptions), i+5, found+1
				continue
			}
		}
		out = append(out, args[i])
	}
	if found != 2 {
		return args, false
	}
	return out, true
}

// Snapshots recorded before fullReportCmd's subreports selected rows
// (segSelect, pvSegNone), with the field lists keel names now, replay from
// the report under the argv keel recorded then: it holds thin volumes'
// segment rows, which the parser reads as it builds them (thinSegment),
// and PV segment rows, which it checks and does not build.
func init() {
	hostio.RegisterMigration(hostio.Migration{Cmd: allRowsReportCmd})
}

// allRowsReportCmd is c, a report built from fullReportCmd, as keel built
// it before its subreports selected rows; ok is false for any other
// command.
func allRowsReportCmd(c hostio.Cmd) (hostio.Cmd, bool) {
	return rewriteReportOptions(c, func(string, string) (string, bool) { return "", false })
}

// narrowLegacyReport rewrites s, a snapshot recorded while the report
// asked for lv_all and seg_all, into the one keel records now: the report
// under fullReportCmd's argv, each LV and segment row with only the fields
// fullReportCmd names, in that order, as LVM prints them, and only the
// rows its selections keep: no thin volume's segment, no PV segment. It
// leaves s as it is when s holds no such report, when that report failed
// (its rows depend on the fields asked: lvm_fieldfail.go), or when a row
// lacks a field keel asks for (an LVM that does not know it) or does not
// decode; Replay then still finds the report under its old argv.
func narrowLegacyReport(s *hostio.Snapshot) {
	old, _ := legacyReportCmd(fullReportCmd)
	rec, found := s.Commands[old.String()]
	if !found || rec.Error != "" || rec.Result.ExitCode != 0 {
		return
	}
	out, ok := narrowReport(rec.Result.Stdout, true)
	if !ok {
		return
	}
	delete(s.Commands, old.String())
	rec.Argv = fullReportCmd.Argv()
	rec.Result.Stdout = out
	s.Commands[fullReportCmd.String()] = rec
}

// narrowReport is out, a report asked with lv_all and seg_all, with each
// LV and segment row cut to the fields fullReportCmd names, in that order;
// when selected, with only the rows fullReportCmd's selections keep, and
// otherwise with every row, as keel asked before them (allRowsReportCmd).
// ok is false when a row lacks a field keel asks for or does not decode.
func narrowReport(out []byte, selected bool) ([]byte, bool) {
	var rep struct {
		Report []map[string][]json.RawMessage `json:"report"`
		Log    json.RawMessage                `json:"log,omitempty"`
	}
	if json.Unmarshal(out, &rep) != nil {
		return nil, false
	}
	keep := map[string][]string{"lv": reportLVFields, "seg": reportSegFields}
	for _, el := range rep.Report {
		for sub, names := range keep {
			for i, raw := range el[sub] {
				var row map[string]string
				if json.Unmarshal(raw, &row) != nil {
					return nil, false
				}
				cut := make([]string, len(names))
				for j, f := range names {
					v, ok := row[f]
					if !ok {
						return nil, false
					}
					cut[j] = strconv.Quote(f) + ":" + quoteJSON(v)
				}
				el[sub][i] = json.RawMessage("{" + strings.Join(cut, ",") + "}")
			}
		}
		if !selected {
			continue
		}
		if _, ok := el["pvseg"]; ok {
			el["pvseg"] = []json.RawMessage{} // pvSegNone
		}
		if segs, ok := el["seg"]; ok {
			el["seg"] = slices.DeleteFunc(segs, isThinSegRow) // segSelect
		}
	}
	b, err := json.Marshal(rep)
	return b, err == nil
}

// isThinSegRow tells a segment row, as narrowReport cut it, of a thin
// volume.
func isThinSegRow(raw json.RawMessage) bool {
	var row struct {
		SegType string `json:"segtype"`
	}
	return json.Unmarshal(raw, &row) == nil && row.SegType == "thin"
}

// quoteJSON is v as a JSON string.
func quoteJSON(v string) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Snapshots recorded after fullReportCmd named its fields, and before it
// asked for lv_profile and seg_monitor (a pool's autoextend profile and its
// monitoring), replay from the report under the argv keel recorded then:
// their rows lack the two fields, which read as "" (not known).
func init() {
	hostio.RegisterMigration(hostio.Migration{Cmd: namedV1ReportCmd})
}

// namedV1Added are the fields fullReportCmd asks for since the named lists'
// first version.
var namedV1Added = []string{"lv_profile", "seg_monitor"}

// namedV1Options is options, a comma-separated field list of
// fullReportCmd, without namedV1Added (nor what came after it).
func namedV1Options(options string) string {
	return withoutFields(options, slices.Concat(namedV1Added, namedV2Added))
}

// withoutFields is options, a comma-separated field list, without drop.
func withoutFields(options string, drop []string) string {
	var out []string
	for _, f := range strings.Split(options, ",") {
		if !slices.Contains(drop, f) {
			out = append(out, f)
		}
	}
	return strings.Join(out, ",")
}

// namedV1ReportCmd is c, a report built from fullReportCmd, as the first
// named lists built it; ok is false for any other command.
func namedV1ReportCmd(c hostio.Cmd) (hostio.Cmd, bool) {
	return rewriteReportOptions(c, func(sub, options string) (string, bool) {
		if (sub == "lv" && options == reportLVOptions) || (sub == "seg" && options == reportSegOptions) {
			return namedV1Options(options), true
		}
		return "", false
	})
}

// Snapshots recorded before fullReportCmd asked for a RAID LV's health
// (lv_health_status, sync_percent, raid_sync_action, raid_mismatch_count)
// replay from the report under the argv keel recorded then: their rows
// lack the four fields, which read as "" (not known; no RAID finding).
func init() {
	hostio.RegisterMigration(hostio.Migration{Cmd: namedV2ReportCmd})
}

// namedV2Added are the fields fullReportCmd asks for since the lists that
// added namedV1Added.
var namedV2Added = []string{"lv_health_status", "sync_percent", "raid_sync_action", "raid_mismatch_count"}

// namedV2ReportCmd is c, a report built from fullReportCmd, as keel built
// it before namedV2Added; ok is false for any other command.
func namedV2ReportCmd(c hostio.Cmd) (hostio.Cmd, bool) {
	return rewriteReportOptions(c, func(sub, options string) (string, bool) {
		if sub == "lv" && options == reportLVOptions {
			return withoutFields(options, namedV2Added), true
		}
		return "", false
	})
}
