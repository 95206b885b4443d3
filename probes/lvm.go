package probes

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// fullReportCmd is the one LVM report of a probe pass.
var fullReportCmd = Cmd{Name: "lvm", Args: []string{"fullreport", "--reportformat", "json", "--units", "b", "--nosuffix", "--all",
	"--configreport", "vg", "-o", "vg_all",
	"--configreport", "pv", "-o", "pv_all,vg_name",
	"--configreport", "lv", "-o", "lv_all,vg_name",
	"--configreport", "seg", "-o", "seg_all,lv_uuid,lv_name,vg_name",
	"--configreport", "pvseg", "-o", "pvseg_all,pv_name,lv_uuid"}}

// lvmReport is the JSON shape of `lvm fullreport --reportformat json`: every
// value a string, one report element per VG (plus one for orphan PVs).
type lvmReport struct {
	Report []map[string][]map[string]string `json:"report"`
	Log    []map[string]string              `json:"log"`
}

// lvmObjects is what the full report says about PVs, VGs and LVs.
type lvmObjects struct {
	PVs map[string]*PV
	VGs map[string]*VG
	LVs map[string]*LV
}

func stripBrackets(s string) string { return strings.TrimSuffix(strings.TrimPrefix(s, "["), "]") }

// parseFullReport parses lvm fullreport JSON into PVs, VGs and LVs. Unknown
// fields are kept in LV.Fields and Segment.Fields; a malformed known field is
// an error naming the field.
func parseFullReport(b []byte) (*lvmObjects, error) {
	var rep lvmReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("lvm fullreport: %w", err)
	}
	o := &lvmObjects{PVs: map[string]*PV{}, VGs: map[string]*VG{}, LVs: map[string]*LV{}}
	byUUID := map[string]*LV{}
	for i, el := range rep.Report {
		var perr error
		num := func(obj, field, v string) uint64 {
			if v == "" {
				return 0
			}
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil && perr == nil {
				perr = fmt.Errorf("lvm fullreport: %s: field %s: %w", obj, field, err)
			}
			return n
		}
		vgName := ""
		for _, r := range el["vg"] {
			if r["vg_name"] == "" {
				continue
			}
			vgName = r["vg_name"]
			vg := &VG{Name: vgName, UUID: r["vg_uuid"], Attr: r["vg_attr"]}
			obj := "vg " + vgName
			vg.ExtentSize = num(obj, "vg_extent_size", r["vg_extent_size"])
			vg.ExtentCount = num(obj, "vg_extent_count", r["vg_extent_count"])
			vg.FreeCount = num(obj, "vg_free_count", r["vg_free_count"])
			vg.Size = num(obj, "vg_size", r["vg_size"])
			vg.Free = num(obj, "vg_free", r["vg_free"])
			o.VGs[vgName] = vg
		}
		for _, r := range el["pv"] {
			if r["pv_name"] == "" {
				continue
			}
			pv := &PV{Name: r["pv_name"], UUID: r["pv_uuid"], VG: r["vg_name"], Attr: r["pv_attr"], Rotational: -1}
			obj := "pv " + pv.Name
			pv.Size = num(obj, "pv_size", r["pv_size"])
			pv.Free = num(obj, "pv_free", r["pv_free"])
			pv.DevSize = num(obj, "dev_size", r["dev_size"])
			pv.PECount = num(obj, "pv_pe_count", r["pv_pe_count"])
			pv.PEAlloc = num(obj, "pv_pe_alloc_count", r["pv_pe_alloc_count"])
			o.PVs[pv.Name] = pv
			if vg := o.VGs[pv.VG]; vg != nil {
				vg.PVs = append(vg.PVs, pv.Name)
			}
		}
		for _, r := range el["lv"] {
			if r["lv_name"] == "" {
				continue
			}
			vg := r["vg_name"]
			if vg == "" {
				vg = vgName
			}
			name := stripBrackets(r["lv_name"])
			lv := &LV{VG: vg, Name: name, FullName: vg + "/" + name, UUID: r["lv_uuid"], Attr: r["lv_attr"],
				Hidden: strings.HasPrefix(r["lv_name"], "["), Origin: stripBrackets(r["origin"]),
				Role: r["lv_role"], Layout: r["lv_layout"], Fields: r, DMName: dmName(vg, name)}
			obj := "lv " + lv.FullName
			if len(lv.Attr) >= 6 {
				lv.Active = lv.Attr[4] == 'a'
				lv.Open = lv.Attr[5] == 'o'
			} else if perr == nil {
				perr = fmt.Errorf("lvm fullreport: %s: field lv_attr: %q is shorter than 6 characters", obj, lv.Attr)
			}
			lv.Size = num(obj, "lv_size", r["lv_size"])
			lv.MetadataSize = num(obj, "lv_metadata_size", r["lv_metadata_size"])
			lv.Major, lv.Minor = signed(r["lv_kernel_major"]), signed(r["lv_kernel_minor"])
			sub := func(v string) string {
				if v = stripBrackets(v); v != "" {
					return vg + "/" + v
				}
				return ""
			}
			lv.Pool, lv.DataLV, lv.MetadataLV = sub(r["pool_lv"]), sub(r["data_lv"]), sub(r["metadata_lv"])
			lv.DataPercent = percent(r["data_percent"])
			lv.MetadataPercent = percent(r["metadata_percent"])
			o.LVs[lv.FullName] = lv
			byUUID[lv.UUID] = lv
			if v := o.VGs[vg]; v != nil {
				v.LVs = append(v.LVs, lv.FullName)
			}
		}
		for _, r := range el["seg"] {
			if r["segtype"] == "" {
				continue
			}
			lv := byUUID[r["lv_uuid"]]
			if lv == nil {
				return nil, fmt.Errorf("lvm fullreport: report %d: segment of unknown lv uuid %q", i, r["lv_uuid"])
			}
			obj := "lv " + lv.FullName + " segment"
			seg := Segment{Type: r["segtype"], Fields: r}
			seg.StartLE = num(obj, "seg_start_pe", r["seg_start_pe"])
			seg.Extents = num(obj, "seg_size_pe", r["seg_size_pe"])
			seg.Size = num(obj, "seg_size", r["seg_size"])
			seg.Stripes = int(num(obj, "stripes", r["stripes"]))
			devs, err := parseSegDevices(r["devices"])
			if err != nil && perr == nil {
				perr = fmt.Errorf("lvm fullreport: %s: field devices: %w", obj, err)
			}
			seg.Devices = devs
			lv.Segments = append(lv.Segments, seg)
		}
		if perr != nil {
			return nil, perr
		}
	}
	for _, lv := range o.LVs {
		sort.Slice(lv.Segments, func(i, j int) bool { return lv.Segments[i].StartLE < lv.Segments[j].StartLE })
		if len(lv.Segments) > 0 {
			lv.SegType = lv.Segments[0].Type
		}
		for i := range lv.Segments {
			seg := &lv.Segments[i]
			for j := range seg.Devices {
				d := &seg.Devices[j]
				if _, ok := o.PVs[d.Name]; ok {
					d.IsPV = true
				}
			}
			seg.PVRanges = segPVRanges(seg)
		}
	}
	for _, vg := range o.VGs {
		sort.Strings(vg.PVs)
		sort.Strings(vg.LVs)
	}
	return o, nil
}

// segPVRanges returns the physical extents a linear or striped segment uses.
func segPVRanges(seg *Segment) []PVRange {
	if seg.Type != "linear" && seg.Type != "striped" || len(seg.Devices) == 0 {
		return nil
	}
	per := seg.Extents / uint64(len(seg.Devices))
	var out []PVRange
	for _, d := range seg.Devices {
		if !d.IsPV || per == 0 {
			continue
		}
		out = append(out, PVRange{PV: d.Name, FirstPE: d.Start, LastPE: d.Start + per - 1})
	}
	return out
}

// parseSegDevices parses "devices": comma-joined "name(start)" entries.
func parseSegDevices(s string) ([]SegmentDev, error) {
	if s == "" {
		return nil, nil
	}
	var out []SegmentDev
	for _, item := range strings.Split(s, ",") {
		open := strings.LastIndexByte(item, '(')
		if open <= 0 || !strings.HasSuffix(item, ")") {
			return nil, fmt.Errorf("%q is not name(start)", item)
		}
		n, err := strconv.ParseUint(item[open+1:len(item)-1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		out = append(out, SegmentDev{Name: stripBrackets(item[:open]), Start: n})
	}
	return out, nil
}

// percent parses an LVM percentage; "" and malformed values give -1.
func percent(s string) float64 {
	if s == "" {
		return -1
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return -1
	}
	return v
}

func signed(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

// dmName is the device-mapper name LVM gives vg/lv: each '-' in a name is
// doubled and the two are joined with '-'.
func dmName(vg, lv string) string {
	return strings.ReplaceAll(vg, "-", "--") + "-" + strings.ReplaceAll(lv, "-", "--")
}
