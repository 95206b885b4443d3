package probes

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/internal/lvmjson"
	"github.com/keel-storage/keel/probes/model"
)

// fullReportCmd is the one LVM report of a probe pass. It names the LV and
// segment fields keel reads (reportLVFields, reportSegFields) instead of
// asking for every one (lv_all, seg_all, as older snapshots did:
// legacyReportCmd): those rows are the thousands, and the whole sets make
// a report several times larger that LVM takes markedly longer to write
// (docs/benchmark-history.md has the figures). VG and PV rows are few and
// are still asked for whole.
//
// Two subreports select rows (lvmreport(7)), for the rows' sake: LVM makes
// its standard output line buffered (setvbuf(stdout, ..., _IOLBF, ...) in
// create_toolcontext, lib/commands/toolcontext.c) and prints a JSON row
// per line, so each row costs LVM a write of its own into keel's memfd.
//   - The segment subreport leaves out thin volumes' segments (segSelect):
//     one per thin LV, and every value in them is the LV's or its pool's
//     (thinSegment builds them).
//   - fullreport always prints its five subreports, and keel reads no PV
//     segment, so the pvseg subreport selects none (pvSegNone). Its rows
//     are one per LV on a VG whose PV is itself an LV (VM disks on a VDO
//     LV).
var fullReportCmd = hostio.Cmd{Name: "lvm", Args: []string{"fullreport", "--reportformat", "json", "--units", "b", "--nosuffix", "--all",
	"--configreport", "vg", "-o", "vg_all",
	"--configreport", "pv", "-o", "pv_all,vg_name",
	"--configreport", "lv", "-o", reportLVOptions,
	"--configreport", "seg", "-o", reportSegOptions, "-S", segSelect,
	"--configreport", "pvseg", "-o", pvSegNone[0], "-S", pvSegNone[1]}, ReadOnly: true}

// segSelect is the selection of fullReportCmd's segment subreport: every
// segment but a thin volume's.
const segSelect = "segtype!=thin"

// pvSegNone are the field list and the selection of fullReportCmd's pvseg
// subreport: one field, and a selection no PV segment meets, since a
// segment's first extent is never below 0.
var pvSegNone = [2]string{"pv_name", "pvseg_start<0"}

// reportLVFields are the LV fields of fullReportCmd (lv_profile: the
// metadata profile attached to the LV, lvchange --metadataprofile, which
// carries a pool's autoextend policy; seg_monitor in reportSegFields:
// whether dmeventd monitors the pool, lvs(8)): what the report
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
	"lv_tags", "lv_time", "lv_autoactivation", "lv_profile",
	"vdo_operating_mode", "vdo_compression_state", "vdo_index_state", "vdo_used_size",
	// A RAID LV's health (model.LV.HealthStatus and its kin; lvs(8),
	// lvmraid(7)): partial, refresh needed, mismatches exist; its sync and
	// the last scrub's count.
	"lv_health_status", "sync_percent", "raid_sync_action", "raid_mismatch_count",
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
	"chunk_size", "zero", "discards", "seg_monitor",
	"vdo_compression", "vdo_deduplication", "vdo_use_metadata_hints", "vdo_minimum_io_size",
	"vdo_block_map_cache_size", "vdo_block_map_era_length", "vdo_use_sparse_index", "vdo_index_memory_size",
	"vdo_slab_size", "vdo_ack_threads", "vdo_bio_threads", "vdo_bio_rotation", "vdo_cpu_threads",
	"vdo_hash_zone_threads", "vdo_logical_threads", "vdo_physical_threads", "vdo_max_discard",
	"vdo_write_policy", "vdo_header_size",
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
	rep, err := lvmjson.DecodeRows(b, parsedSubreport, false)
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
func parseRetried(failed lvmjson.Report, ferr error, retried []byte, vgs []string) (*lvmObjects, error) {
	if ferr != nil {
		return nil, fmt.Errorf("lvm fullreport: %w", ferr)
	}
	r, err := lvmjson.DecodeRows(retried, parsedSubreport, false)
	if err != nil {
		return nil, fmt.Errorf("lvm fullreport %s: %w", strings.Join(vgs, " "), err)
	}
	return parseReport(mergeRetried(failed, r, vgs))
}

// parseReport builds the PVs, VGs and LVs of a decoded full report.
func parseReport(rep lvmjson.Report) (*lvmObjects, error) {
	nLV := 0
	for _, el := range rep.Report {
		nLV += len(el["lv"])
	}
	p := newReportParser(nLV)
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
// the others (pvseg: fullReportCmd selects none, older snapshots hold them)
// are checked but not built.
func parsedSubreport(name string) bool {
	switch name {
	case "vg", "pv", "lv", "seg":
		return true
	}
	return false
}

// reportParser builds the objects of one full report, one sub-report
// (vg, pv, lv, seg) at a time. The LVs of an element, and the first
// segment of each, are laid out in one array apiece: fewer allocations,
// and neighbours in memory for the passes over all LVs that follow.
type reportParser struct {
	o      *lvmObjects
	byUUID map[string]*model.LV
}

// newReportParser makes a parser for a report of about nLV LVs.
func newReportParser(nLV int) *reportParser {
	return &reportParser{
		o:      &lvmObjects{PVs: map[string]*model.PV{}, VGs: map[string]*model.VG{}, LVs: make(map[string]*model.LV, nLV)},
		byUUID: make(map[string]*model.LV, nLV),
	}
}

// buildSteps are the subreports of an element in the order parseReport
// reads them: a step needs the objects of the steps before it.
var buildSteps = [...]string{"vg", "pv", "lv", "seg"}

// streamBuilder runs parseReport's steps while the report is decoded
// (lvmjson.Watch): an element's LVs are built while LVM still writes its
// segments, and its segments while LVM writes the next VG. Whatever it
// does not expect (a subreport twice, an error, elements out of order)
// makes it give up, and the pass builds from the whole report with
// parseReport instead, so that a failure reads the same.
type streamBuilder struct {
	p       *reportParser
	elem    int                       // the element being read
	rows    map[string][]model.Fields // its subreports read so far
	step    int                       // its steps done (buildSteps)
	vgName  string                    // its VG, once the vg step ran
	f       fieldReader
	gaveUp  bool
	elemEnd int // elements read whole
}

func newStreamBuilder() *streamBuilder {
	return &streamBuilder{p: newReportParser(0), rows: map[string][]model.Fields{}}
}

// watch is what the decoder tells of the report's parts.
func (b *streamBuilder) watch() lvmjson.Watch {
	return lvmjson.Watch{Subreport: b.subreport, ElementEnd: b.elementEnd}
}

func (b *streamBuilder) subreport(elem int, name string, rows []model.Fields) {
	if b.gaveUp {
		return
	}
	if _, again := b.rows[name]; again || elem != b.elem {
		b.gaveUp = true
		return
	}
	b.rows[name] = rows
	for b.step < len(buildSteps) && !b.gaveUp {
		if _, in := b.rows[buildSteps[b.step]]; !in {
			break
		}
		b.run()
	}
}

func (b *streamBuilder) elementEnd(elem int) {
	if b.gaveUp {
		return
	}
	if elem != b.elem {
		b.gaveUp = true
		return
	}
	for b.step < len(buildSteps) && !b.gaveUp {
		b.run() // a subreport the element lacks reads as no rows
	}
	b.elem, b.step, b.vgName, b.f = elem+1, 0, "", fieldReader{}
	clear(b.rows)
	b.elemEnd++
}

// run runs the element's next step.
func (b *streamBuilder) run() {
	rows := b.rows[buildSteps[b.step]]
	switch b.step {
	case 0:
		b.vgName = b.p.vgs(&b.f, rows)
	case 1:
		b.p.pvs(&b.f, rows)
	case 2:
		b.p.lvs(&b.f, rows, b.vgName)
	case 3:
		if err := b.p.segs(&b.f, b.elem, rows); err != nil || b.f.err != nil {
			b.gaveUp = true
		}
	}
	b.step++
}

// objects returns what parseReport returns for rep, the report whose
// decoding the builder watched.
func (b *streamBuilder) objects(rep lvmjson.Report) (*lvmObjects, error) {
	if b.gaveUp || b.elemEnd != len(rep.Report) || b.step != 0 {
		return parseReport(rep)
	}
	b.p.finish()
	return b.p.o, nil
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
		vg := &model.VG{Name: vgName, UUID: r.Get("vg_uuid"), Attr: attr, LockType: r.Get("vg_lock_type"), LockArgs: r.Get("vg_lock_args"),
			Shared: truthy(r.Get("vg_shared")) || truthy(r.Get("vg_clustered")) || len(attr) > 5 && strings.ContainsRune("sc", rune(attr[5]))}
		if aa, ok := r.Lookup("vg_autoactivation"); ok {
			vg.NoAutoactivation = aa != "enabled"
		}
		vg.Profile = r.Get("vg_profile")
		if t := r.Get("vg_tags"); t != "" {
			vg.Tags = strings.Split(t, ",")
		}
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
	arr := make([]model.LV, 0, len(rows))
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
		arr = append(arr, model.LV{VG: vg, Name: name, FullName: vg + "/" + name, UUID: v.get(lvfUUID), Attr: v.get(lvfAttr),
			Hidden: strings.HasPrefix(lvName, "["), Origin: stripBrackets(v.get(lvfOrigin)),
			Role: v.get(lvfRole), Layout: v.get(lvfLayout), Fields: r, DMName: lvm.Name{VG: vg, LV: name}.DMName()})
		lv := &arr[len(arr)-1]
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

// finish orders each LV's segments, builds the segments of thin volumes
// the report left out (thinSegment), marks the devices that are PVs, and
// sorts each VG's PV and LV lists.
func (p *reportParser) finish() {
	o := p.o
	for _, lv := range o.LVs {
		slices.SortFunc(lv.Segments, func(a, b model.Segment) int { return cmp.Compare(a.StartLE, b.StartLE) })
		if len(lv.Segments) > 0 {
			lv.SegType = lv.Segments[0].Type
		}
	}
	for _, lv := range o.LVs {
		if len(lv.Segments) == 0 {
			if pool := o.LVs[lv.Pool]; pool != nil && pool.SegType == "thin-pool" {
				lv.Segments = []model.Segment{thinSegment(lv, pool, o.VGs[lv.VG])}
				lv.SegType = "thin"
			}
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

// thinSegment is the segment row LVM prints for lv, a thin volume of
// pool, whose row fullReportCmd's segment subreport leaves out
// (segSelect), in the shape of the pool's row. LVM keeps a thin
// volume in one segment (lv_add_virtual_segment in
// lib/metadata/lv_manip.c lengthens the last segment of the same type),
// with no areas, and its report fields (lib/report/report.c) are the LV's
// or the pool's: discards and zero are the pool's (_discards_disp,
// _thinzero_disp), chunk_size is 0 (lvseg_chunksize, lib/metadata/lv.c),
// seg_monitor is empty (the thin segment type has no target_monitored,
// lib/thin/thin.c), and every VDO field is empty (_vdo_*_disp).
// TestSelectedRowsSameHost holds it to LVM's own rows in every capture,
// and e2e/probes to the rows the guest's LVM prints.
func thinSegment(lv, pool *model.LV, vg *model.VG) model.Segment {
	extents := uint64(0)
	if vg != nil && vg.ExtentSize > 0 {
		extents = lv.Size / vg.ExtentSize
	}
	keys := pool.Segments[0].Fields.Keys()
	if keys == nil {
		keys = model.NewFieldKeys(slices.Clone(reportSegFields))
	}
	var text strings.Builder
	offs := make([]uint32, 0, keys.Len()+1)
	for i := range keys.Len() {
		offs = append(offs, uint32(text.Len()))
		text.WriteString(thinSegmentValue(keys.Name(i), lv, pool, extents))
	}
	offs = append(offs, uint32(text.Len()))
	return model.Segment{Type: "thin", Extents: extents, Size: lv.Size, Fields: model.NewFields(keys, text.String(), offs)}
}

// thinSegmentValue is the value of the segment field name in the row of
// thinSegment.
func thinSegmentValue(name string, lv, pool *model.LV, extents uint64) string {
	switch name {
	case "segtype":
		return "thin"
	case "lv_uuid":
		return lv.UUID
	case "lv_name", "vg_name":
		return lv.Fields.Get(name)
	case "seg_start_pe", "stripes", "chunk_size":
		return "0"
	case "seg_size_pe":
		return strconv.FormatUint(extents, 10)
	case "seg_size":
		return lv.Fields.Get("lv_size")
	case "zero", "discards":
		return pool.Segments[0].Fields.Get(name)
	}
	return "" // devices, seg_monitor, vdo_*
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
