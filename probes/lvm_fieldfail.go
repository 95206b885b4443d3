package probes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/internal/lvmjson"
	"github.com/keel-storage/keel/probes/model"
)

// A report field can fail in LVM while the rest of the report is sound.
// libdm's _do_report_object (libdm/libdm-report.c in lvm2) logs "report
// function failed for field F" when a field's report function fails, and
// then drops the whole row: for `lvm fullreport` that is the LV's row and
// its segments' rows, while every other object is reported and the command
// exits 5 (ECMD_FAILED). The one such failure seen so far is
// vdo_saving_percent: LVM computes it (lib/metadata/vdo_manip.c,
// parse_vdo_pool_status) as dm_make_percent(logical_blocks_used −
// data_blocks_used, logical_blocks_used) in unsigned arithmetic, and when
// VDO holds more data blocks than the LVs map (a nearly empty pool whose
// stacked VG metadata was just rewritten: 144 data and 52 logical blocks
// used in probes/testdata/scale/scale-vdo) the difference wraps and
// dm_report_field_percent cannot print it in its 7 characters ("percentage
// too large"). keel must not read such a report as it is: the VDO pool and
// its LV would look absent. fullReportCmd no longer asks for that field
// (keel never read it), but any field keel does ask for may fail the same
// way on some LVM, and snapshots recorded while it asked for lv_all hold
// such reports.
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
//
// It reads only what the retry needs, the log and the field names of the
// first LV row (reportHead): the rows are decoded while the retry runs
// (Probe), so a report of thousands of LVs is read once, not first to find
// its log and then again for its rows. Where the quick reading does not
// find them, the whole report is read and checked first, as before.
func fieldFailureRetry(stdout []byte) (retry hostio.Cmd, vgs []string, note string, ok bool) {
	log, lvKeys, found := lvmjson.Head(stdout)
	if !found {
		rep, err := lvmjson.DecodeRows(stdout, func(sub string) bool { return sub == "lv" }, true)
		if err != nil {
			return hostio.Cmd{}, nil, "", false
		}
		log, lvKeys = rep.Log, nil
		for _, el := range rep.Report {
			if rows := el["lv"]; len(rows) > 0 {
				for k := range rows[0].All() {
					lvKeys = append(lvKeys, k)
				}
				break
			}
		}
	}
	return retryWithout(log, lvKeys)
}

// retryWithout is fieldFailureRetry's decision on a failed report's log
// and the field names its LV rows carry.
func retryWithout(log []map[string]string, lvKeys []string) (retry hostio.Cmd, vgs []string, note string, ok bool) {
	if len(log) == 0 {
		return hostio.Cmd{}, nil, "", false
	}
	failed := map[string]bool{}
	var objects []string
	wholeHost := false
	for _, e := range log {
		msg := e["log_message"]
		switch e["log_type"] {
		case "status":
			if msg != "success" && msg != "failure" {
				return hostio.Cmd{}, nil, "", false
			}
		case "error":
			if strings.HasPrefix(msg, "dm_report_field_percent: ") {
				continue
			}
			field, found := strings.CutPrefix(msg, "_do_report_object: report function failed for field ")
			if !found || field == "" || e["log_object_type"] != "lv" {
				return hostio.Cmd{}, nil, "", false
			}
			vg := e["log_object_group"]
			failed[field] = true
			objects = append(objects, vg+"/"+e["log_object_name"])
			if vg == "" {
				wholeHost = true
			}
			vgs = append(vgs, vg)
		default:
			return hostio.Cmd{}, nil, "", false
		}
	}
	if len(failed) == 0 {
		return hostio.Cmd{}, nil, "", false
	}
	var fields []string
	for _, k := range lvKeys {
		if !failed[k] {
			fields = append(fields, k)
		}
	}
	if len(fields) == 0 || !slices.Contains(fields, "lv_uuid") || !slices.Contains(fields, "vg_name") {
		return hostio.Cmd{}, nil, "", false // no LV row to learn the field names from
	}
	slices.Sort(fields)
	slices.Sort(vgs)
	vgs = slices.Compact(vgs)
	again := "VG " + strings.Join(vgs, ", ")
	if wholeHost {
		vgs, again = nil, "every VG"
	}
	retry = retryCmd(fields, vgs)
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
func mergeRetried(failed, retried lvmjson.Report, vgs []string) lvmjson.Report {
	out := lvmjson.Report{Log: retried.Log}
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
func elementVG(el map[string][]model.Fields) string {
	for _, r := range el["vg"] {
		if v := r.Get("vg_name"); v != "" {
			return v
		}
	}
	return ""
}

// retryCmd is fullreport with the LV fields named one by one (sorted) and,
// unless vgs is nil, only the VGs vgs (sorted, no repeats).
func retryCmd(fields, vgs []string) hostio.Cmd {
	c := fullReportCmd
	c.Args = slices.Clone(fullReportCmd.Args)
	c.Args[lvOptionsIndex()] = strings.Join(fields, ",")
	if vgs != nil {
		// "--" ends the options: a VG name cannot be taken for one.
		c.Args = append(append(c.Args, "--"), vgs...)
	}
	return c
}

// VGOfDMName is the VG of a device-mapper name LVM made (dmName, with a
// layer such as "-vpool" after it): the part before the first '-' that is
// not doubled, with each "--" read as '-'; false for a name LVM cannot have
// made.
func VGOfDMName(name string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if name[i] != '-' {
			b.WriteByte(name[i])
			continue
		}
		if i+1 < len(name) && name[i+1] == '-' {
			b.WriteByte('-')
			i++
			continue
		}
		return b.String(), b.Len() > 0
	}
	return "", false
}
