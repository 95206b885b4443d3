package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/keel-storage/keel/lvm/units"
	"github.com/keel-storage/keel/probes/model"
)

// lvsDefaultColumns are the columns of keel status's LV report without -o:
// lvs's default (report/lvs_cols in lvm.conf) less the fields keel does not
// read (move_pv, mirror_log, copy_percent, convert_lv).
var lvsDefaultColumns = []string{"lv_name", "vg_name", "lv_attr", "lv_size", "pool_lv", "origin", "data_percent", "metadata_percent"}

// lvsHeadings are lvs's column headings of the LV fields keel reads, from
// the FIELD table of lvm2's lib/report/columns.h.
var lvsHeadings = map[string]string{
	"lv_name": "LV", "vg_name": "VG", "lv_uuid": "LV UUID", "lv_attr": "Attr", "lv_size": "LSize",
	"lv_metadata_size": "MSize", "lv_kernel_major": "KMaj", "lv_kernel_minor": "KMin",
	"lv_role": "Role", "lv_layout": "Layout", "pool_lv": "Pool", "data_lv": "Data", "metadata_lv": "Meta",
	"origin": "Origin", "data_percent": "Data%", "metadata_percent": "Meta%", "lv_tags": "LV Tags",
	"lv_time": "CTime", "lv_autoactivation": "AutoAct", "vdo_operating_mode": "VDOOperatingMode",
	"vdo_compression_state": "VDOCompressionState", "vdo_index_state": "VDOIndexState",
	"vdo_used_size": "VDOUsedSize",
}

// lvsReport is keel status's LV report, as lvs prints one: the columns, a
// heading line unless noHeadings, and the columns aligned with one space, or
// joined by separator unaligned when one is given; every line starts with
// two spaces, as lvs's do.
type lvsReport struct {
	columns    []string
	noHeadings bool
	separator  string
	all        bool // the hidden LVs too, as lvs -a
}

// parseColumns reads -o: a comma-separated list of lvs field names, or,
// when it starts with "+", fields added to the default columns (lvs -o
// +FIELD). known are the fields the probe reads.
func parseColumns(spec string, known []string) ([]string, error) {
	var cols []string
	if rest, ok := strings.CutPrefix(spec, "+"); ok {
		cols, spec = slices.Clone(lvsDefaultColumns), rest
	}
	for _, f := range strings.Split(spec, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !slices.Contains(known, f) {
			return nil, fmt.Errorf("unknown field %q; the fields are %s", f, strings.Join(known, ","))
		}
		cols = append(cols, f)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("no field")
	}
	return cols, nil
}

// lvFieldNames are the LV fields the probe read on h, sorted.
func lvFieldNames(h *model.Host) []string {
	seen := map[string]bool{}
	for _, lv := range h.LVs {
		for k := range lv.Fields.All() {
			seen[k] = true
		}
	}
	names := make([]string, 0, len(seen))
	for k := range seen {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// rightAligned reports whether lvs right-aligns field: sizes, percents and
// numbers (SIZ, PCT, NUM and SNUM in columns.h).
func rightAligned(field string) bool {
	return strings.HasSuffix(field, "_size") || strings.HasSuffix(field, "_percent") ||
		field == "lv_kernel_major" || field == "lv_kernel_minor"
}

// cell is the value of field on lv as the report shows it: sizes (read in
// bytes) as keel prints every size, the rest as LVM reported it.
func cell(lv *model.LV, field string) string {
	v := lv.Fields.Get(field)
	if strings.HasSuffix(field, "_size") {
		if n, err := strconv.ParseUint(v, 10, 64); err == nil {
			return units.FormatSize(n)
		}
	}
	return v
}

// write prints the report of h's LVs, sorted by VG and LV name as lvs sorts
// them (report/lvs_sort).
func (r lvsReport) write(w io.Writer, h *model.Host) {
	lvs := make([]*model.LV, 0, len(h.LVs))
	for _, lv := range h.LVs {
		if r.all || !lv.Hidden {
			lvs = append(lvs, lv)
		}
	}
	slices.SortFunc(lvs, func(a, b *model.LV) int { return cmp.Or(cmp.Compare(a.VG, b.VG), cmp.Compare(a.Name, b.Name)) })
	var rows [][]string
	if !r.noHeadings {
		var head []string
		for _, c := range r.columns {
			head = append(head, cmp.Or(lvsHeadings[c], c))
		}
		rows = append(rows, head)
	}
	for _, lv := range lvs {
		var row []string
		for _, c := range r.columns {
			row = append(row, cell(lv, c))
		}
		rows = append(rows, row)
	}
	if r.separator != "" {
		for _, row := range rows {
			fmt.Fprintf(w, "  %s\n", strings.Join(row, r.separator))
		}
		return
	}
	width := make([]int, len(r.columns))
	for _, row := range rows {
		for i, v := range row {
			width[i] = max(width[i], len(v))
		}
	}
	for _, row := range rows {
		var b strings.Builder
		for i, v := range row {
			if i > 0 {
				b.WriteByte(' ')
			}
			pad := strings.Repeat(" ", width[i]-len(v))
			if rightAligned(r.columns[i]) {
				b.WriteString(pad + v)
			} else {
				b.WriteString(v + pad)
			}
		}
		fmt.Fprintf(w, "  %s\n", b.String())
	}
}
