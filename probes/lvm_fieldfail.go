package probes

import (
	"fmt"
	"slices"
	"strings"
)

// A report field can fail in LVM while the rest of the report is sound.
// libdm's _do_report_object (libdm/libdm-report.c in lvm2) logs "report
// function failed for field F" when a field's report function fails, and
// then drops the whole row: for `lvm fullreport` that is the LV's row and
// its segments' rows, while every other object is reported and the command
// exits 5 (ECMD_FAILED). The one such failure seen so far is
// vdo_saving_percent: dm_report_field_percent prints a percentage into 7
// characters and fails ("percentage too large") when VDO holds more data
// blocks than the LVs map (a nearly empty pool whose stacked VG metadata
// was just rewritten gives -182.35%, captured in
// probes/testdata/scale/scale-vdo). keel must not read such a report as it
// is: the VDO pool and its LV would look absent. It cannot drop the field
// from lv_all either: `-o-FIELD` removes an entry of the option list
// (tools/reporter.c, _get_report_options), not a field of a set.
//
// So the probe asks again with the LV fields named one by one: every field
// the failed report's LV rows carry (they come from this LVM, so every
// name is known to it), without the failed ones. A report whose log holds
// anything else than field failures is an error as before.
//
// It asks only for the VGs holding the failed LVs (fullreport takes VG
// names, as vgs does) and takes every other VG from the failed report:
// the failure ends the report of that VG alone (in the guest capture the
// failed VG's element lost its LV and segment rows while the next VG,
// with 2,000 LVs, was reported whole), and fullreport reads and reports
// one VG after another under that VG's own lock (tools/toollib.c,
// process_each_vg), so a report merged from two runs is as consistent as
// one run. Asking for every VG again made a pass on the 2,000-LV host
// twice as long in the guest.

// lvOptionsIndex is the position of the LV subreport's field list in
// fullReportCmd's Args: the value of the -o after "--configreport lv".
func lvOptionsIndex() int {
	a := fullReportCmd.Args
	for i := 0; i+3 < len(a); i++ {
		if a[i] == "--configreport" && a[i+1] == "lv" && a[i+2] == "-o" {
			return i + 3
		}
	}
	panic("probes: fullReportCmd has no --configreport lv -o")
}

// fieldFailureRetry reads a fullreport that exited 5 and, when every error
// in its log is a failed report field of an LV, returns the command that
// reports the VGs of those LVs again without those fields, the VGs, and a
// note for Host.Errors. When the log does not name the VG of every failed
// LV, vgs is nil and the command reports every VG again. ok is false for
// any other failure.
func fieldFailureRetry(stdout []byte) (retry Cmd, vgs []string, note string, ok bool) {
	// Only the log and the first LV row's field names are read: the rows
	// of the report that failed are read again by the retry, and building
	// them here cost as much as the retry's own parse (thousands of LVs).
	rep, err := decodeReportRows(stdout, func(sub string) bool { return sub == "lv" }, true)
	if err != nil || len(rep.Log) == 0 {
		return Cmd{}, nil, "", false
	}
	failed := map[string]bool{}
	var objects []string
	wholeHost := false
	for _, e := range rep.Log {
		msg := e["log_message"]
		switch e["log_type"] {
		case "status":
			if msg != "success" && msg != "failure" {
				return Cmd{}, nil, "", false
			}
		case "error":
			if strings.HasPrefix(msg, "dm_report_field_percent: ") {
				continue
			}
			field, found := strings.CutPrefix(msg, "_do_report_object: report function failed for field ")
			if !found || field == "" || e["log_object_type"] != "lv" {
				return Cmd{}, nil, "", false
			}
			vg := e["log_object_group"]
			failed[field] = true
			objects = append(objects, vg+"/"+e["log_object_name"])
			if vg == "" {
				wholeHost = true
			}
			vgs = append(vgs, vg)
		default:
			return Cmd{}, nil, "", false
		}
	}
	if len(failed) == 0 {
		return Cmd{}, nil, "", false
	}
	var fields []string
	for _, el := range rep.Report {
		if rows := el["lv"]; len(rows) > 0 {
			for k := range rows[0].All() {
				if !failed[k] {
					fields = append(fields, k)
				}
			}
			break
		}
	}
	if len(fields) == 0 || !slices.Contains(fields, "lv_uuid") || !slices.Contains(fields, "vg_name") {
		return Cmd{}, nil, "", false // no LV row to learn the field names from
	}
	slices.Sort(fields)
	slices.Sort(vgs)
	vgs = slices.Compact(vgs)
	retry = Cmd{Name: fullReportCmd.Name, Args: slices.Clone(fullReportCmd.Args), Timeout: fullReportCmd.Timeout}
	retry.Args[lvOptionsIndex()] = strings.Join(fields, ",")
	again := "VG " + strings.Join(vgs, ", ")
	if wholeHost {
		vgs, again = nil, "every VG"
	} else {
		// "--" ends the options: a VG name cannot be taken for one.
		retry.Args = append(append(retry.Args, "--"), vgs...)
	}
	names := make([]string, 0, len(failed))
	for f := range failed {
		names = append(names, f)
	}
	slices.Sort(names)
	slices.Sort(objects)
	objects = slices.Compact(objects)
	note = fmt.Sprintf("lvm fullreport: exit status 5: field %s failed for %s, and LVM leaves those LVs out of its report; %s read again without it",
		strings.Join(names, ", "), strings.Join(objects, ", "), again)
	return retry, vgs, note, true
}

// mergeRetried is the failed report with the element of each VG in vgs
// replaced by the retried report's elements (in the place of the first
// one; appended when the failed report has none).
func mergeRetried(failed, retried lvmReport, vgs []string) lvmReport {
	out := lvmReport{Log: retried.Log}
	placed := false
	for _, el := range failed.Report {
		if !slices.Contains(vgs, elementVG(el)) {
			out.Report = append(out.Report, el)
			continue
		}
		if !placed {
			out.Report = append(out.Report, retried.Report...)
			placed = true
		}
	}
	if !placed {
		out.Report = append(out.Report, retried.Report...)
	}
	return out
}

// elementVG is the VG of a report element ("" for orphan PVs).
func elementVG(el map[string][]Fields) string {
	for _, r := range el["vg"] {
		if v := r.Get("vg_name"); v != "" {
			return v
		}
	}
	return ""
}
