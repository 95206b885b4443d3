package probes

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
)

// fullReportCmd is the one LVM report of a probe pass. It names the LV and
// segment fields keel reads (reportLVFields, reportSegFields) instead of
// asking for every one (lv_all, seg_all, as snapshots recorded before
// 2026-12-04 did: legacyReportCmd): those rows are the thousands, and at
// 2,000 thin LVs in the TCG guest the whole sets made a 7.9 MB report that
// LVM took about 1.5 s to write, against 2.5 MB and about 1.05 s for the
// fields keel reads (docs/benchmark-history.md). VG, PV and PV-segment
// rows are few and are still asked for whole.
var fullReportCmd = hostio.Cmd{Name: "lvm", Args: []string{"fullreport", "--reportformat", "json", "--units", "b", "--nosuffix", "--all",
	"--configreport", "vg", "-o", "vg_all",
	"--configreport", "pv", "-o", "pv_all,vg_name",
	"--configreport", "lv", "-o", reportLVOptions,
	"--configreport", "seg", "-o", reportSegOptions,
	"--configreport", "pvseg", "-o", "pvseg_all,pv_name,lv_uuid"}, ReadOnly: true}

// reportLVFields are the LV fields of fullReportCmd: what the report
// parser, the planner and the wipe inventory read (LV, LV.Fields), and the
// VDO pool's state fields that VDOPool.Settings shows. Every one is in
// lib/report/columns.h of lvm2 2.03.16 (Debian bookworm, Proxmox VE 8);
// lv_autoactivation came in 2.03.12, so an older LVM fails the report
// with "Unrecognised field" (docs/probes.md). vdo_saving_percent is left
// out: keel does not read it, and LVM fails the LV's whole row when it
// cannot print it (lvm_fieldfail.go).
var reportLVFields = []string{
	"lv_name", "vg_name", "lv_uuid", "lv_attr", "lv_size", "lv_metadata_size",
	"lv_kernel_major", "lv_kernel_minor", "lv_role", "lv_layout",
	"pool_lv", "data_lv", "metadata_lv", "origin", "data_percent", "metadata_percent",
	"lv_tags", "lv_time", "lv_autoactivation",
	"vdo_operating_mode", "vdo_compression_state", "vdo_index_state", "vdo_used_size",
}

// reportLVOptions and reportSegOptions are the lists as fullReportCmd's
// -o values.
var (
	reportLVOptions  = strings.Join(reportLVFields, ",")
	reportSegOptions = strings.Join(reportSegFields, ",")
)

// reportSegFields are the segment fields of fullReportCmd: what the report
// parser and the thin and VDO pool builders read, and every VDO setting
// (a segment field in LVM; VDOPool.Settings).
var reportSegFields = []string{
	"segtype", "lv_uuid", "lv_name", "vg_name", "seg_start_pe", "seg_size_pe", "seg_size", "stripes", "devices",
	"chunk_size", "zero", "discards",
	"vdo_compression", "vdo_deduplication", "vdo_use_metadata_hints", "vdo_minimum_io_size",
	"vdo_block_map_cache_size", "vdo_block_map_era_length", "vdo_use_sparse_index", "vdo_index_memory_size",
	"vdo_slab_size", "vdo_ack_threads", "vdo_bio_threads", "vdo_bio_rotation", "vdo_cpu_threads",
	"vdo_hash_zone_threads", "vdo_logical_threads", "vdo_physical_threads", "vdo_max_discard",
	"vdo_write_policy", "vdo_header_size",
}

// lvmReport is the JSON shape of `lvm fullreport --reportformat json`: every
// value a string, one report element per VG (plus one for orphan PVs),
// each element's subreports (vg, pv, lv, seg, pvseg) by name.
type lvmReport struct {
	Report []map[string][]model.Fields `json:"report"`
	Log    []map[string]string         `json:"log"`
}

// lvmObjects is what the full report says about PVs, VGs and LVs.
type lvmObjects struct {
	PVs map[string]*model.PV
	VGs map[string]*model.VG
	LVs map[string]*model.LV
}

func stripBrackets(s string) string { return strings.TrimSuffix(strings.TrimPrefix(s, "["), "]") }

// parseFullReport parses lvm fullreport JSON into PVs, VGs and LVs. Unknown
// fields are kept in LV.Fields and Segment.Fields; a malformed known field is
// an error naming the field.
func parseFullReport(b []byte) (*lvmObjects, error) {
	rep, err := decodeReportRows(b, parsedSubreport, false)
	if err != nil {
		return nil, fmt.Errorf("lvm fullreport: %w", err)
	}
	return parseReport(rep)
}

// parseRetried parses a fullreport that failed on a field together with
// its retry of the VGs vgs (lvm_fieldfail.go): each of those VGs as the
// retry reports it, every other VG as the failed report does. failed is
// the failed report decoded as parseFullReport decodes, ferr its decoding
// error.
func parseRetried(failed lvmReport, ferr error, retried []byte, vgs []string) (*lvmObjects, error) {
	if ferr != nil {
		return nil, fmt.Errorf("lvm fullreport: %w", ferr)
	}
	r, err := decodeReportRows(retried, parsedSubreport, false)
	if err != nil {
		return nil, fmt.Errorf("lvm fullreport %s: %w", strings.Join(vgs, " "), err)
	}
	return parseReport(mergeRetried(failed, r, vgs))
}

// parseReport builds the PVs, VGs and LVs of a decoded full report.
func parseReport(rep lvmReport) (*lvmObjects, error) {
	p := newReportParser(rep)
	for i, el := range rep.Report {
		var f fieldReader
		vgName := p.vgs(&f, el["vg"])
		p.pvs(&f, el["pv"])
		p.lvs(&f, el["lv"], vgName)
		if err := p.segs(&f, i, el["seg"]); err != nil {
			return nil, err
		}
		if f.err != nil {
			return nil, f.err
		}
	}
	p.finish()
	return p.o, nil
}

// parsedSubreport tells the subreports parseFullReport reads; the rows of
// the others (pvseg: fullReportCmd asks for it, nothing reads it yet) are
// checked but not built.
func parsedSubreport(name string) bool {
	switch name {
	case "vg", "pv", "lv", "seg":
		return true
	}
	return false
}

// reportParser builds the objects of one full report, one sub-report
// (vg, pv, lv, seg) at a time.
type reportParser struct {
	o      *lvmObjects
	byUUID map[string]*model.LV
	// The LVs, and each element's first segment of every LV, are laid out
	// in one array apiece: fewer allocations, and neighbours in memory for
	// the passes over all LVs that follow.
	arr []model.LV
}

func newReportParser(rep lvmReport) *reportParser {
	nLV := 0
	for _, el := range rep.Report {
		nLV += len(el["lv"])
	}
	return &reportParser{
		o:      &lvmObjects{PVs: map[string]*model.PV{}, VGs: map[string]*model.VG{}, LVs: make(map[string]*model.LV, nLV)},
		byUUID: make(map[string]*model.LV, nLV),
		arr:    make([]model.LV, 0, nLV),
	}
}

// vgs reads an element's VG rows and returns the name of its VG ("" for
// the element of orphan PVs).
func (p *reportParser) vgs(f *fieldReader, rows []model.Fields) string {
	vgName := ""
	for _, r := range rows {
		if r.Get("vg_name") == "" {
			continue
		}
		vgName = r.Get("vg_name")
		attr := r.Get("vg_attr")
		vg := &model.VG{Name: vgName, UUID: r.Get("vg_uuid"), Attr: attr, LockType: r.Get("vg_lock_type"),
			Shared: truthy(r.Get("vg_shared")) || truthy(r.Get("vg_clustered")) || len(attr) > 5 && strings.ContainsRune("sc", rune(attr[5]))}
		obj := reportObject{kind: "vg", name: vgName}
		vg.ExtentSize = f.num(obj, "vg_extent_size", r)
		vg.Seqno = f.num(obj, "vg_seqno", r)
		vg.ExtentCount = f.num(obj, "vg_extent_count", r)
		vg.FreeCount = f.num(obj, "vg_free_count", r)
		vg.Size = f.num(obj, "vg_size", r)
		vg.Free = f.num(obj, "vg_free", r)
		p.o.VGs[vgName] = vg
	}
	return vgName
}

// pvs reads an element's PV rows.
func (p *reportParser) pvs(f *fieldReader, rows []model.Fields) {
	for _, r := range rows {
		if r.Get("pv_name") == "" {
			continue
		}
		pv := &model.PV{Name: r.Get("pv_name"), UUID: r.Get("pv_uuid"), VG: r.Get("vg_name"), Attr: r.Get("pv_attr"), Rotational: -1}
		obj := reportObject{kind: "pv", name: pv.Name}
		pv.Size = f.num(obj, "pv_size", r)
		pv.Free = f.num(obj, "pv_free", r)
		pv.DevSize = f.num(obj, "dev_size", r)
		pv.PECount = f.num(obj, "pv_pe_count", r)
		pv.PEAlloc = f.num(obj, "pv_pe_alloc_count", r)
		p.o.PVs[pv.Name] = pv
		if vg := p.o.VGs[pv.VG]; vg != nil {
			vg.PVs = append(vg.PVs, pv.Name)
		}
	}
}

// The fields lvs reads from an LV row, by their index in lvFields.
const (
	lvfName = iota
	lvfVG
	lvfUUID
	lvfAttr
	lvfOrigin
	lvfRole
	lvfLayout
	lvfSize
	lvfMetadataSize
	lvfMajor
	lvfMinor
	lvfPool
	lvfData
	lvfMetadata
	lvfDataPercent
	lvfMetadataPercent
	lvfCount
)

var lvFields = [lvfCount]string{
	lvfName: "lv_name", lvfVG: "vg_name", lvfUUID: "lv_uuid", lvfAttr: "lv_attr", lvfOrigin: "origin",
	lvfRole: "lv_role", lvfLayout: "lv_layout", lvfSize: "lv_size", lvfMetadataSize: "lv_metadata_size",
	lvfMajor: "lv_kernel_major", lvfMinor: "lv_kernel_minor", lvfPool: "pool_lv", lvfData: "data_lv",
	lvfMetadata: "metadata_lv", lvfDataPercent: "data_percent", lvfMetadataPercent: "metadata_percent",
}

// lvs reads an element's LV rows; vgName is the element's VG.
func (p *reportParser) lvs(f *fieldReader, rows []model.Fields, vgName string) {
	set := newFieldSet(lvFields[:])
	for _, r := range rows {
		v := set.of(r)
		lvName := v.get(lvfName)
		if lvName == "" {
			continue
		}
		vg := v.get(lvfVG)
		if vg == "" {
			vg = vgName
		}
		name := stripBrackets(lvName)
		p.arr = append(p.arr, model.LV{VG: vg, Name: name, FullName: vg + "/" + name, UUID: v.get(lvfUUID), Attr: v.get(lvfAttr),
			Hidden: strings.HasPrefix(lvName, "["), Origin: stripBrackets(v.get(lvfOrigin)),
			Role: v.get(lvfRole), Layout: v.get(lvfLayout), Fields: r, DMName: dmName(vg, name)})
		lv := &p.arr[len(p.arr)-1]
		obj := reportObject{kind: "lv", name: lv.FullName}
		if len(lv.Attr) >= 6 {
			lv.Active = lv.Attr[4] == 'a'
			lv.Open = lv.Attr[5] == 'o'
		} else if f.err == nil {
			f.err = fmt.Errorf("lvm fullreport: %s: field lv_attr: %q is shorter than 6 characters", obj, lv.Attr)
		}
		lv.Size = f.numOf(obj, lvFields[lvfSize], v.get(lvfSize))
		lv.MetadataSize = f.numOf(obj, lvFields[lvfMetadataSize], v.get(lvfMetadataSize))
		lv.Major, lv.Minor = signed(v.get(lvfMajor)), signed(v.get(lvfMinor))
		lv.Pool, lv.DataLV, lv.MetadataLV = subLV(vg, v.get(lvfPool)), subLV(vg, v.get(lvfData)), subLV(vg, v.get(lvfMetadata))
		lv.DataPercent = percent(v.get(lvfDataPercent))
		lv.MetadataPercent = percent(v.get(lvfMetadataPercent))
		p.o.LVs[lv.FullName] = lv
		p.byUUID[lv.UUID] = lv
		if vgo := p.o.VGs[vg]; vgo != nil {
			if vgo.LVs == nil {
				vgo.LVs = make([]string, 0, len(rows))
			}
			vgo.LVs = append(vgo.LVs, lv.FullName)
		}
	}
}

// The fields segs reads from a segment row, by their index in segFields.
const (
	sgfType = iota
	sgfLVUUID
	sgfStart
	sgfExtents
	sgfSize
	sgfStripes
	sgfDevices
	sgfCount
)

var segFields = [sgfCount]string{
	sgfType: "segtype", sgfLVUUID: "lv_uuid", sgfStart: "seg_start_pe", sgfExtents: "seg_size_pe",
	sgfSize: "seg_size", sgfStripes: "stripes", sgfDevices: "devices",
}

// segs reads an element's segment rows (element i) into their LVs.
func (p *reportParser) segs(f *fieldReader, i int, rows []model.Fields) error {
	segs := make([]model.Segment, 0, len(rows))
	set := newFieldSet(segFields[:])
	for _, r := range rows {
		v := set.of(r)
		segType := v.get(sgfType)
		if segType == "" {
			continue
		}
		lv := p.byUUID[v.get(sgfLVUUID)]
		if lv == nil {
			return fmt.Errorf("lvm fullreport: report %d: segment of unknown lv uuid %q", i, v.get(sgfLVUUID))
		}
		obj := reportObject{kind: "lv", name: lv.FullName, suffix: " segment"}
		seg := model.Segment{Type: segType, Fields: r}
		seg.StartLE = f.numOf(obj, segFields[sgfStart], v.get(sgfStart))
		seg.Extents = f.numOf(obj, segFields[sgfExtents], v.get(sgfExtents))
		seg.Size = f.numOf(obj, segFields[sgfSize], v.get(sgfSize))
		seg.Stripes = int(f.numOf(obj, segFields[sgfStripes], v.get(sgfStripes)))
		devs, err := parseSegDevices(v.get(sgfDevices))
		if err != nil && f.err == nil {
			f.err = fmt.Errorf("lvm fullreport: %s: field devices: %w", obj, err)
		}
		seg.Devices = devs
		if lv.Segments == nil {
			segs = append(segs, seg)
			lv.Segments = segs[len(segs)-1 : len(segs) : len(segs)]
		} else {
			lv.Segments = append(lv.Segments, seg)
		}
	}
	return nil
}

// finish orders each LV's segments, marks the devices that are PVs, and
// sorts each VG's PV and LV lists.
func (p *reportParser) finish() {
	o := p.o
	for _, lv := range o.LVs {
		slices.SortFunc(lv.Segments, func(a, b model.Segment) int { return cmp.Compare(a.StartLE, b.StartLE) })
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
}

// reportObject names a report object in errors ("lv vg0/lv0 segment"); it
// is formatted only when there is an error.
type reportObject struct{ kind, name, suffix string }

func (o reportObject) String() string { return o.kind + " " + o.name + o.suffix }

// fieldReader parses numeric report fields and keeps the first error.
type fieldReader struct{ err error }

// num parses field of row r as an unsigned number; "" is 0.
func (f *fieldReader) num(obj reportObject, field string, r model.Fields) uint64 {
	return f.numOf(obj, field, r.Get(field))
}

// numOf parses v, the value of field, as num does.
func (f *fieldReader) numOf(obj reportObject, field, v string) uint64 {
	if v == "" {
		return 0
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil && f.err == nil {
		f.err = fmt.Errorf("lvm fullreport: %s: field %s: %w", obj, field, err)
	}
	return n
}

// subLV turns a sub-LV field ("[lvb_vdata]") into "vg/lvb_vdata", and "" into "".
func subLV(vg, v string) string {
	if v = stripBrackets(v); v != "" {
		return vg + "/" + v
	}
	return ""
}

// segPVRanges returns the physical extents a linear or striped segment uses.
func segPVRanges(seg *model.Segment) []model.PVRange {
	if seg.Type != "linear" && seg.Type != "striped" || len(seg.Devices) == 0 {
		return nil
	}
	per := seg.Extents / uint64(len(seg.Devices))
	var out []model.PVRange
	for _, d := range seg.Devices {
		if !d.IsPV || per == 0 {
			continue
		}
		out = append(out, model.PVRange{PV: d.Name, FirstPE: d.Start, LastPE: d.Start + per - 1})
	}
	return out
}

// parseSegDevices parses "devices": comma-joined "name(start)" entries.
func parseSegDevices(s string) ([]model.SegmentDev, error) {
	if s == "" {
		return nil, nil
	}
	out := make([]model.SegmentDev, 0, strings.Count(s, ",")+1)
	for rest, more := s, true; more; {
		var item string
		item, rest, more = strings.Cut(rest, ",")
		open := strings.LastIndexByte(item, '(')
		if open <= 0 || !strings.HasSuffix(item, ")") {
			return nil, fmt.Errorf("%q is not name(start)", item)
		}
		n, err := strconv.ParseUint(item[open+1:len(item)-1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		out = append(out, model.SegmentDev{Name: stripBrackets(item[:open]), Start: n})
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
	var b strings.Builder
	b.Grow(len(vg) + len(lv) + 1 + strings.Count(vg, "-") + strings.Count(lv, "-"))
	for i, part := range [2]string{vg, lv} {
		if i > 0 {
			b.WriteByte('-')
		}
		for rest, more := part, true; more; {
			var chunk string
			chunk, rest, more = strings.Cut(rest, "-")
			b.WriteString(chunk)
			if more {
				b.WriteString("--")
			}
		}
	}
	return b.String()
}

// decodeLVMReport decodes lvm fullreport JSON into an lvmReport. It gives
// what json.Unmarshal gives for that type with maps for rows (the same
// report, or an error where json.Unmarshal fails) at a fraction of the
// cost: the shape is fixed, so it needs no reflection; row keys are
// interned (every row of a subreport repeats the same names); the rows of
// a subreport are Fields that share one key list (their shape), and the
// values and offsets of many rows share one string and one array; each log
// row's map is made at its final size and its values share one string.
func decodeLVMReport(b []byte) (lvmReport, error) {
	return decodeReportRows(b, nil, false)
}

// decodeReportRows decodes b as decodeLVMReport does, but builds only the
// rows of the subreports keep accepts (nil: every subreport) and, with
// firstOnly, only the first row of each of those: the other rows are read
// and checked as strictly, so b is an error exactly when it is for
// decodeLVMReport, and they are left out of the report. The log is always
// built.
func decodeReportRows(b []byte, keep func(subreport string) bool, firstOnly bool) (lvmReport, error) {
	return decodeWith(&reportDecoder{b: b, keys: map[string]int32{}, keep: keep, firstOnly: firstOnly})
}

// decodeReportStream decodes a report as decodeReportRows does while the
// command writes it: grow is the next of hostio.Cmd.Consume. What it
// returns is what decodeReportRows returns for the whole output when the
// command ends normally; a caller that sees the command fail decodes the
// whole output again (Probe).
func decodeReportStream(grow func() ([]byte, bool), keep func(subreport string) bool) (lvmReport, error) {
	b, done := grow()
	d := &reportDecoder{b: b, keys: map[string]int32{}, keep: keep}
	if !done {
		d.grow = grow
	}
	return decodeWith(d)
}

func decodeWith(d *reportDecoder) (lvmReport, error) {
	var rep lvmReport
	if err := d.report(&rep); err != nil {
		return lvmReport{}, err
	}
	return rep, nil
}

// avail reports whether byte j of the input is there, waiting for it
// while a streamed input grows: the decoder reads a stream exactly as it
// reads the whole input, only sooner.
func (d *reportDecoder) avail(j int) bool {
	for j >= len(d.b) {
		if d.grow == nil {
			return false
		}
		b, done := d.grow()
		if done {
			d.grow = nil
		}
		if len(b) > len(d.b) {
			d.b = b
		}
	}
	return true
}

// maxJSONDepth is encoding/json's limit on nested arrays and objects.
const maxJSONDepth = 10000

// reportDecoder reads one lvm fullreport document.
type reportDecoder struct {
	b []byte
	// grow, while set, gives b with more bytes as a streamed input grows
	// (hostio.Cmd.Consume); it is dropped once it says the input is whole.
	grow  func() ([]byte, bool)
	i     int              // next byte to read
	keys  map[string]int32 // interned row keys: index in names
	names []rowKey         // interned row keys by index
	row   []rowEntry       // the row being read
	prev  []int32          // the keys of the row read before, in order
	// vals holds decoded values back to back: the row's, or those of the
	// subreport rows in pend and then the row's.
	vals []byte
	// pend are the rows of the subreport being read whose values are in
	// vals: flushText gives them their text, one string for all of them.
	pend []pendingRow
	// offs is the array the next rows' value offsets go in; rows keep
	// parts of it, which are not written again.
	offs []uint32
	// shapes are the last Fields shapes made (at most maxShapes); shape
	// is the one used last, and evict the one a new shape replaces.
	shapes       []decoderShape
	shape, evict int
	// keep and firstOnly say which rows are built (decodeReportRows).
	keep      func(subreport string) bool
	firstOnly bool
	// stopAtFirst ends the reading with errFirstRow as soon as the first
	// row of a kept subreport is in first (reportHead).
	stopAtFirst bool
	first       model.Fields
}

// rowKey is an interned key; plain tells whether JSON holds it verbatim,
// without escapes.
type rowKey struct {
	name  string
	plain bool
}

// plainJSON reports whether s is ASCII without control characters, quotes and backslashes.
func plainJSON(s []byte) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// rowEntry is one key of a row (its index in reportDecoder.names) and its
// value's bytes in reportDecoder.vals. It holds no pointer: appending it
// needs no write barrier.
type rowEntry struct {
	key      int32
	off, end int
}

// pendingRow is a subreport row whose values, vals[start:end], are not yet
// its text; row is its index in the subreport.
type pendingRow struct{ row, start, end int }

// decoderShape is a Fields shape with the interned keys of the rows it
// was made for.
type decoderShape struct {
	ids  []int32
	keys *model.FieldKeys
}

// same reports whether row has the keys of the shape, in its order.
func (s *decoderShape) same(row []rowEntry) bool {
	if len(row) != len(s.ids) {
		return false
	}
	for i, e := range row {
		if e.key != s.ids[i] {
			return false
		}
	}
	return true
}

const (
	// maxShapes bounds the Fields shapes a decoder keeps to compare rows
	// with: a full report has four (vg, pv, lv, seg).
	maxShapes = 8
	// textChunk is about how many bytes of values the rows of one string
	// share (a few dozen LV rows), and offsChunk how many offsets the rows
	// of one array do: the report's values are not copied again as they
	// would be in one buffer that grows.
	textChunk = 16 << 10
	offsChunk = 4 << 10
)

// syntaxError describes malformed JSON at the current offset.
func (d *reportDecoder) syntaxError(what string) error {
	if !d.avail(d.i) {
		return fmt.Errorf("unexpected end of JSON input (%s)", what)
	}
	return fmt.Errorf("offset %d: invalid character %q (%s)", d.i, d.b[d.i], what)
}

// valueError describes the value at the current offset, which is not the
// kind wanted: a syntax error if no JSON value starts there.
func (d *reportDecoder) valueError(want string) error {
	kind := ""
	if d.avail(d.i) {
		switch c := d.b[d.i]; {
		case c == '{':
			kind = "object"
		case c == '[':
			kind = "array"
		case c == '"':
			kind = "string"
		case c == 't' || c == 'f':
			kind = "bool"
		case c == 'n':
			kind = "null"
		case c == '-' || c >= '0' && c <= '9':
			kind = "number"
		}
	}
	if kind == "" {
		return d.syntaxError("looking for a value")
	}
	return fmt.Errorf("offset %d: cannot decode a JSON %s into %s", d.i, kind, want)
}

// ws skips JSON white space and returns the next byte, 0 at the end.
func (d *reportDecoder) ws() byte {
	for ; d.i < len(d.b) || d.avail(d.i); d.i++ {
		switch c := d.b[d.i]; c {
		case ' ', '\t', '\n', '\r':
		default:
			return c
		}
	}
	return 0
}

// null consumes a null literal if one is next.
func (d *reportDecoder) null() (bool, error) {
	if d.ws() != 'n' {
		return false, nil
	}
	return true, d.literal("null")
}

func (d *reportDecoder) literal(lit string) error {
	if !d.avail(d.i+len(lit)-1) || string(d.b[d.i:d.i+len(lit)]) != lit {
		return d.syntaxError("in literal " + lit)
	}
	d.i += len(lit)
	return nil
}

// next consumes the ',' between members or the closing byte of a
// container; more tells which.
func (d *reportDecoder) next(closing byte) (more bool, err error) {
	switch d.ws() {
	case ',':
		d.i++
		return true, nil
	case closing:
		d.i++
		return false, nil
	}
	return false, d.syntaxError("after a value")
}

// open consumes the opening byte of a container, reporting whether it is
// empty (and then consumes its closing byte too).
func (d *reportDecoder) open(opening, closing byte, want string) (empty bool, err error) {
	if d.ws() != opening {
		return false, d.valueError(want)
	}
	d.i++
	if d.ws() == closing {
		d.i++
		return true, nil
	}
	return false, nil
}

// key reads an object key and the ':' after it and returns it; with
// intern, it keeps one copy of each distinct key and returns its index in
// d.names too (-1 without). Rows of one subreport list the same keys in the
// same order, so a row key is first compared with the key the previous row
// had at its place.
func (d *reportDecoder) key(intern bool) (int32, string, error) {
	if d.ws() != '"' {
		return -1, "", d.syntaxError("looking for an object key")
	}
	if n := len(d.row); intern && n < len(d.prev) {
		// The previous row's key at this place, needing no escapes, is
		// this key when the input holds it verbatim and then a '"'.
		id := d.prev[n]
		if k := d.names[id]; k.plain {
			if end := d.i + 1 + len(k.name); (end < len(d.b) || d.avail(end)) && d.b[end] == '"' && string(d.b[d.i+1:end]) == k.name {
				d.i = end + 1
				if d.ws() != ':' {
					return -1, "", d.syntaxError("after an object key")
				}
				d.i++
				return id, k.name, nil
			}
		}
	}
	start := len(d.vals)
	var err error
	if d.vals, err = d.str(d.vals); err != nil {
		return -1, "", err
	}
	raw := d.vals[start:]
	d.vals = d.vals[:start]
	if d.ws() != ':' {
		return -1, "", d.syntaxError("after an object key")
	}
	d.i++
	if !intern {
		return -1, string(raw), nil
	}
	if id, ok := d.keys[string(raw)]; ok {
		return id, d.names[id].name, nil
	}
	if len(d.names) == math.MaxInt32 {
		return -1, "", fmt.Errorf("offset %d: more than %d distinct keys", d.i, math.MaxInt32)
	}
	id := int32(len(d.names))
	k := rowKey{name: string(raw), plain: plainJSON(raw)}
	d.names = append(d.names, k)
	d.keys[k.name] = id
	return id, k.name, nil
}

// str reads the JSON string at d.i and appends its decoded bytes to buf.
// Plain ASCII is copied as is; a string with escapes or other bytes is
// decoded by encoding/json itself, for its exact handling of surrogates and
// invalid UTF-8.
func (d *reportDecoder) str(buf []byte) ([]byte, error) {
	start := d.i
	for j := start + 1; j < len(d.b) || d.avail(j); j++ {
		switch c := d.b[j]; {
		case c == '"':
			d.i = j + 1
			return append(buf, d.b[start+1:j]...), nil
		case c == '\\' || c < 0x20 || c >= 0x80:
			return d.strSlow(buf)
		}
	}
	d.i = len(d.b)
	return buf, d.syntaxError("in string literal")
}

func (d *reportDecoder) strSlow(buf []byte) ([]byte, error) {
	start := d.i
	j := start + 1
	for ; (j < len(d.b) || d.avail(j)) && d.b[j] != '"'; j++ {
		if d.b[j] == '\\' {
			j++
		}
	}
	if !d.avail(j) {
		d.i = len(d.b)
		return buf, d.syntaxError("in string literal")
	}
	var s string
	if err := json.Unmarshal(d.b[start:j+1], &s); err != nil {
		return buf, fmt.Errorf("offset %d: %w", start, err)
	}
	d.i = j + 1
	return append(buf, s...), nil
}

// report reads the whole document: the "report" and "log" members (matched
// without regard to case, as encoding/json does); others are checked and
// skipped.
func (d *reportDecoder) report(rep *lvmReport) error {
	if null, err := d.null(); null || err != nil {
		return d.end(err)
	}
	empty, err := d.open('{', '}', "the report")
	for more := !empty; err == nil && more; {
		var k string
		if _, k, err = d.key(false); err != nil {
			break
		}
		switch {
		case strings.EqualFold(k, "report"):
			err = d.elements(&rep.Report)
		case strings.EqualFold(k, "log"):
			err = d.rows(&rep.Log)
		default:
			err = d.skip(1)
		}
		if err == nil {
			more, err = d.next('}')
		}
	}
	return d.end(err)
}

// end checks that only white space follows the document.
func (d *reportDecoder) end(err error) error {
	if d.ws(); err == nil && d.avail(d.i) {
		err = d.syntaxError("after the top-level value")
	}
	return err
}

// elements reads the "report" array, one object per VG. Like
// encoding/json, it decodes into the elements a slice already has.
func (d *reportDecoder) elements(dst *[]map[string][]model.Fields) error {
	return decodeArray(d, dst, "report elements", d.element)
}

// element reads one report element: subreport name to rows.
func (d *reportDecoder) element(dst *map[string][]model.Fields) error {
	if null, err := d.null(); null || err != nil {
		*dst = nil
		return err
	}
	empty, err := d.open('{', '}', "a report element")
	if err != nil {
		return err
	}
	if *dst == nil {
		*dst = make(map[string][]model.Fields, 5)
	}
	for more := !empty; more; {
		_, name, err := d.key(true)
		if err != nil {
			return err
		}
		if d.keep != nil && !d.keep(name) {
			if err := d.skipRows(); err != nil {
				return err
			}
		} else {
			var rows []model.Fields
			if err := d.subreportRows(&rows); err != nil {
				return err
			}
			(*dst)[name] = rows
		}
		if more, err = d.next('}'); err != nil {
			return err
		}
	}
	return nil
}

// rows reads an array of rows.
func (d *reportDecoder) rows(dst *[]map[string]string) error {
	return decodeArray(d, dst, "rows", d.oneRow)
}

// subreportRows reads a subreport's rows: all of them, or with firstOnly
// the first one built and the others read and checked.
func (d *reportDecoder) subreportRows(dst *[]model.Fields) error {
	d.vals, d.pend = d.vals[:0], d.pend[:0]
	if !d.firstOnly {
		return d.fieldsRows(dst)
	}
	var first [1]model.Fields
	n := 0
	none := []struct{}{}
	err := decodeArray(d, &none, "rows", func(*struct{}) error {
		if n++; n == 1 {
			if err := d.fieldsRow(first[:], 0); err != nil || !d.stopAtFirst {
				return err
			}
			d.flushText(first[:])
			d.first = first[0]
			return errFirstRow
		}
		return d.skipRow()
	})
	switch {
	case none == nil:
		*dst = nil
	case n == 0:
		*dst = []model.Fields{}
	default:
		d.flushText(first[:])
		*dst = first[:]
	}
	return err
}

// fieldsRows reads an array of rows as decodeArray does into a new slice.
// Every few rows, and at the end, the rows read give their values one
// string (flushText): the slice they are in is at hand here.
func (d *reportDecoder) fieldsRows(dst *[]model.Fields) error {
	if null, err := d.null(); null || err != nil {
		*dst = nil
		return err
	}
	empty, err := d.open('[', ']', "rows")
	if err != nil {
		return err
	}
	var rows []model.Fields
	for more := !empty; more; {
		if len(rows) == cap(rows) {
			// Double, where append grows a large slice by a quarter:
			// an lv subreport has thousands of rows.
			rows = slices.Grow(rows, max(len(rows), 4))
		}
		rows = append(rows, model.Fields{})
		if err := d.fieldsRow(rows, len(rows)-1); err != nil {
			return err
		}
		if len(d.vals) >= textChunk {
			d.flushText(rows)
		}
		if more, err = d.next(']'); err != nil {
			return err
		}
	}
	d.flushText(rows)
	if rows == nil {
		rows = []model.Fields{}
	}
	*dst = rows
	return nil
}

// skipRows reads and checks an array of rows without building them.
func (d *reportDecoder) skipRows() error {
	var none []struct{}
	return decodeArray(d, &none, "rows", func(*struct{}) error { return d.skipRow() })
}

// skipRow reads and checks one row without building it.
func (d *reportDecoder) skipRow() error {
	mark := len(d.vals)
	_, err := d.readRow()
	d.vals = d.vals[:mark]
	return err
}

// fieldsRow reads one row of a subreport, an object of strings (null is
// ""), into rows[i], a Fields of the shape of its keys (null gives the
// zero Fields). Its offsets are set; its values stay in d.vals until
// flushText.
func (d *reportDecoder) fieldsRow(rows []model.Fields, i int) error {
	start := len(d.vals)
	null, err := d.readRow()
	if err != nil || null {
		return err
	}
	keys := d.rowShape()
	row := d.row
	if len(row) != keys.Len() {
		// A key repeats: as in a map, its last value counts. The values
		// are copied in the shape's order after the row's.
		last := make([]rowEntry, keys.Len())
		for _, e := range row {
			j, _ := keys.Index(d.names[e.key].name)
			last[j] = e
		}
		start = len(d.vals)
		for j, e := range last {
			off := len(d.vals)
			d.vals = append(d.vals, d.vals[e.off:e.end]...)
			last[j].off, last[j].end = off, len(d.vals)
		}
		row = last
	}
	if uint64(len(d.vals)-start) > model.MaxRowText {
		return fmt.Errorf("offset %d: a row of more than %d bytes", d.i, uint64(model.MaxRowText))
	}
	n := len(row) + 1
	if cap(d.offs)-len(d.offs) < n {
		d.offs = make([]uint32, 0, max(offsChunk, n))
	}
	k := len(d.offs)
	for _, e := range row {
		d.offs = append(d.offs, uint32(e.off-start))
	}
	d.offs = append(d.offs, uint32(len(d.vals)-start))
	rows[i] = model.NewFields(keys, "", d.offs[k:k+n:k+n])
	d.pend = append(d.pend, pendingRow{row: i, start: start, end: len(d.vals)})
	return nil
}

// rowShape returns the Fields shape of the keys of d.row: the shape of the
// row before when they are the same, as they are in a subreport.
func (d *reportDecoder) rowShape() *model.FieldKeys {
	if d.shape < len(d.shapes) && d.shapes[d.shape].same(d.row) {
		return d.shapes[d.shape].keys
	}
	for i := range d.shapes {
		if d.shapes[i].same(d.row) {
			d.shape = i
			return d.shapes[i].keys
		}
	}
	ids := make([]int32, len(d.row))
	names := make([]string, len(d.row))
	for i, e := range d.row {
		ids[i], names[i] = e.key, d.names[e.key].name
	}
	s := decoderShape{ids: ids, keys: model.NewFieldKeys(names)}
	if len(d.shapes) < maxShapes {
		d.shapes = append(d.shapes, s)
		d.shape = len(d.shapes) - 1
	} else {
		d.shapes[d.evict] = s
		d.shape, d.evict = d.evict, (d.evict+1)%maxShapes
	}
	return s.keys
}

// flushText gives the pending rows, which are in rows, their values: one
// string for all of them.
func (d *reportDecoder) flushText(rows []model.Fields) {
	if len(d.pend) > 0 {
		text := string(d.vals)
		for _, p := range d.pend {
			rows[p.row] = rows[p.row].WithText(text[p.start:p.end])
		}
	}
	d.vals, d.pend = d.vals[:0], d.pend[:0]
}

// decodeArray reads a JSON array into *dst with encoding/json's rules:
// null gives nil, [] an empty slice, and element i is decoded into what
// the slice holds at i.
func decodeArray[T any](d *reportDecoder, dst *[]T, want string, elem func(*T) error) error {
	if null, err := d.null(); null || err != nil {
		*dst = nil
		return err
	}
	empty, err := d.open('[', ']', want)
	if err != nil {
		return err
	}
	s := *dst
	i := 0
	for more := !empty; more; i++ {
		if i >= cap(s) {
			s = slices.Grow(s, 1)
		}
		if i >= len(s) {
			s = s[:i+1]
		}
		if err := elem(&s[i]); err != nil {
			*dst = s
			return err
		}
		if more, err = d.next(']'); err != nil {
			*dst = s
			return err
		}
	}
	if i == 0 {
		s = []T{}
	}
	*dst = s[:i]
	return nil
}

// readRow reads one row, an object of strings (null is ""), into d.row,
// appending its values to d.vals; null tells that the row is JSON null.
func (d *reportDecoder) readRow() (null bool, err error) {
	if null, err := d.null(); null || err != nil {
		return null, err
	}
	empty, err := d.open('{', '}', "a row")
	if err != nil {
		return false, err
	}
	d.row = d.row[:0]
	for more := !empty; more; {
		k, _, err := d.key(true)
		if err != nil {
			return false, err
		}
		e := rowEntry{key: k, off: len(d.vals)}
		switch d.ws() {
		case '"':
			if d.vals, err = d.str(d.vals); err != nil {
				return false, err
			}
		case 'n':
			if err := d.literal("null"); err != nil {
				return false, err
			}
		default:
			return false, d.valueError("a string")
		}
		e.end = len(d.vals)
		d.row = append(d.row, e)
		if more, err = d.next('}'); err != nil {
			return false, err
		}
	}
	d.prev = d.prev[:0]
	for _, e := range d.row {
		d.prev = append(d.prev, e.key)
	}
	return false, nil
}

// oneRow reads one row, an object of strings (null is ""), into a map made
// at its final size, whose values share one string.
func (d *reportDecoder) oneRow(dst *map[string]string) error {
	d.vals = d.vals[:0]
	null, err := d.readRow()
	if err != nil {
		return err
	}
	if null {
		*dst = nil
		return nil
	}
	m := *dst
	if m == nil {
		m = make(map[string]string, len(d.row))
		*dst = m
	}
	vals := string(d.vals)
	for _, e := range d.row {
		if e.off == e.end {
			m[d.names[e.key].name] = ""
		} else {
			m[d.names[e.key].name] = vals[e.off:e.end]
		}
	}
	return nil
}

// skip checks and skips one JSON value of any kind; depth counts the arrays
// and objects around it.
func (d *reportDecoder) skip(depth int) error {
	switch c := d.ws(); c {
	case '{', '[':
		if depth >= maxJSONDepth {
			return fmt.Errorf("offset %d: exceeded max depth", d.i)
		}
		closing := byte(']')
		if c == '{' {
			closing = '}'
		}
		empty, err := d.open(c, closing, "")
		for more := !empty; err == nil && more; {
			if c == '{' {
				if d.ws() != '"' {
					return d.syntaxError("looking for an object key")
				}
				if _, err = d.str(nil); err != nil {
					return err
				}
				if d.ws() != ':' {
					return d.syntaxError("after an object key")
				}
				d.i++
			}
			if err = d.skip(depth + 1); err == nil {
				more, err = d.next(closing)
			}
		}
		return err
	case '"':
		_, err := d.str(nil)
		return err
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	}
	return d.number()
}

// number checks and skips a JSON number.
func (d *reportDecoder) number() error {
	j := d.i
	digits := func() bool {
		k := j
		for d.avail(j) && d.b[j] >= '0' && d.b[j] <= '9' {
			j++
		}
		return j > k
	}
	if d.avail(j) && d.b[j] == '-' {
		j++
	}
	switch {
	case d.avail(j) && d.b[j] == '0':
		j++
	case !digits():
		d.i = j
		return d.syntaxError("looking for a value")
	}
	if d.avail(j) && d.b[j] == '.' {
		j++
		if !digits() {
			d.i = j
			return d.syntaxError("after decimal point in numeric literal")
		}
	}
	if d.avail(j) && (d.b[j] == 'e' || d.b[j] == 'E') {
		j++
		if d.avail(j) && (d.b[j] == '+' || d.b[j] == '-') {
			j++
		}
		if !digits() {
			d.i = j
			return d.syntaxError("in exponent of numeric literal")
		}
	}
	d.i = j
	return nil
}
