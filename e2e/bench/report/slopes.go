package main

import "fmt"

// growthPoint is one host size of the growth table: the probe-parse plus
// plan cost on the build machine (Go benchmark) and, for the guest sizes,
// the real probe pass and the daemon's peak RSS.
type growthPoint struct {
	label         string
	lvs           float64
	ns, bytes     float64 // per probe+plan (Go benchmark medians); 0 when not measured
	pass, rssKiB  float64 // guest: in-process pass seconds, daemon VmHWM; 0 when not measured
	synthetic, ok bool
}

// slopes is item 5 of the scale issue: how probe, plan and memory grow
// from ~50 to 2,000 to 50,000 LVs, with the slope per LV between points.
func (r *report) slopes() {
	r.p("## Growth from ~50 to 2,000 to 50,000 LVs\n\n")
	res := parseBench(r.read("scale.txt"))
	sizes, _ := parseGuest(r.read("guest.txt"))
	guest := map[string]*guestSize{}
	for _, g := range sizes {
		guest[g.tag] = g
	}
	point := func(label, bench, tag string, synthetic bool) growthPoint {
		p := growthPoint{label: label, synthetic: synthetic}
		if b := findBench(res, bench); b != nil {
			p.ns = summarize(b.values["ns/op"]).med
			p.bytes = summarize(b.values["B/op"]).med
			p.lvs = summarize(b.values["lvs"]).med
			p.ok = true
		}
		if g := guest[tag]; g != nil {
			p.pass = summarize(g.pass).med
			p.rssKiB = g.d["hwm-kib"]
			if p.lvs == 0 {
				p.lvs = float64(g.lvs)
			}
			p.ok = true
		}
		return p
	}
	pts := []growthPoint{
		point("~50 LVs (guest capture scale-vdo-50)", "BenchmarkScaleSnapshots/scale-vdo-50", "50", false),
		point("2,000 LVs on VDO (guest capture scale-vdo)", "BenchmarkScaleSnapshots/scale-vdo", "2000", false),
		point("2,000 thin LVs (guest capture scale-thin)", "BenchmarkScaleSnapshots/scale-thin", "2000-thin", false),
		point("50,000 LVs (synthetic, BenchmarkScale)", "BenchmarkScale/probeplan/lvs=50000", "", true),
	}
	if pts[3].ok && pts[3].lvs == 0 {
		pts[3].lvs = 50000
	}
	found := false
	for _, p := range pts {
		found = found || p.ok
	}
	if !found {
		r.p("%s.\n\n", r.notRun("scale"))
		return
	}
	r.p("Probe-parse plus audit plan of the captured hosts on the build machine\n")
	r.p("(`BenchmarkScaleSnapshots` in `reconcile/plan/scale_snapshot_test.go`, run with BenchmarkScale;\n")
	r.p("the captures are `probes/testdata/scale/*.txtar.gz`, made by `e2e/capture-fixtures.sh scale-vdo\n")
	r.p("scale-thin`), the 50,000-LV synthetic host of BenchmarkScale above (probe plus plan against its\n")
	r.p("desired state of 64 pools and 64 bcache devices), and from this run's guest the in-process probe\n")
	r.p("pass and the daemon's peak RSS. The slope is the extra cost of one more LV from the nearest\n")
	r.p("host of at most half the LVs with that figure. The capture of the 2,000-LV host on VDO was taken\n")
	r.p("while keel asked for `lv_all`: its first `lvm fullreport` exits 5 (a failed `vdo_saving_percent`,\n")
	r.p("and the VDO pool's rows left out) and the replay reads the VDO pool's VG again without that field.\n")
	r.p("Since 6bc698b keel does not ask for that field, so the guest's pass runs one report.\n\n")
	r.p("| host | LVs | probe+plan | B/op | slope per LV (time, bytes) | guest probe pass | slope per LV | daemon peak RSS | slope per LV |\n")
	r.p("|---|---:|---|---:|---|---|---|---|---|\n")
	cell := func(v float64, f func(float64) string) string {
		if v == 0 {
			return "—"
		}
		return f(v)
	}
	for i, p := range pts {
		if !p.ok {
			r.p("| %s | — | not measured | | | | | | |\n", p.label)
			continue
		}
		// Each slope runs from the nearest host of at most half the LVs that has the figure.
		from := func(has func(q growthPoint) bool) (growthPoint, bool) {
			for j := i - 1; j >= 0; j-- {
				if q := pts[j]; q.ok && has(q) && 2*q.lvs <= p.lvs {
					return q, true
				}
			}
			return growthPoint{}, false
		}
		slope, pslope, rslope := "—", "—", "—"
		if q, ok := from(func(q growthPoint) bool { return q.ns > 0 }); ok && p.ns > 0 {
			dn := p.lvs - q.lvs
			slope = fmt.Sprintf("%s, %.3g B", dur((p.ns-q.ns)/dn), (p.bytes-q.bytes)/dn)
		}
		if q, ok := from(func(q growthPoint) bool { return q.pass > 0 }); ok && p.pass > 0 {
			pslope = dur((p.pass - q.pass) / (p.lvs - q.lvs) * 1e9)
		}
		if q, ok := from(func(q growthPoint) bool { return q.rssKiB > 0 }); ok && p.rssKiB > 0 {
			rslope = fmt.Sprintf("%.1f KiB", (p.rssKiB-q.rssKiB)/(p.lvs-q.lvs))
		}
		r.p("| %s | %.0f | %s | %s | %s | %s | %s | %s | %s |\n", p.label, p.lvs, cell(p.ns, dur), cell(p.bytes, qty), slope,
			cell(p.pass, sec), pslope, cell(p.rssKiB, func(v float64) string { return fmt.Sprintf("%.1f MiB", v/1024) }), rslope)
	}
	r.checkScale(res)
	r.p("\nThe synthetic 50,000-LV host is not the captured 2,000-LV host grown: it carries 64 VDO pools and\n")
	r.p("64 bcache devices and is planned against a desired state declaring them, so its slope from the\n")
	r.p("2,000-LV row mixes the per-LV cost with that per-pool work; the 1k/10k/50k slopes of the table\n")
	r.p("above are the per-LV cost on one kind of host. On the guest the probe pass is bound by `lvm\n")
	r.p("fullreport` (the side-by-side table), whose own cost per LV is LVM's.\n\n")
}

// checkScale is the table of BenchmarkCheckScale: what a `keel check -c`
// process does after its start on the captured hosts, beside its load of
// the desired state.
func (r *report) checkScale(res []*benchResult) {
	type row struct {
		label string
		b     *benchResult
	}
	var rows []row
	for _, c := range []struct{ label, name string }{
		{"~50 LVs (scale-vdo-50, `vdo-thick.cue`)", "scale-vdo-50"},
		{"2,000 LVs on VDO (scale-vdo, `vdo-thick.cue`)", "scale-vdo"},
		{"2,000 thin LVs (scale-thin, `scale-thin.cue`)", "scale-thin"},
	} {
		if b := findBench(res, "BenchmarkCheckScale/"+c.name); b != nil {
			rows = append(rows, row{c.label, b})
		}
	}
	if len(rows) == 0 {
		return
	}
	r.p("\n`keel check`'s own work on the same captures (`BenchmarkCheckScale` in `reconcile/plan/report_golden_test.go`): the probe pass\n")
	r.p("replayed, the plan against a desired state (`reconcile/plan/testdata/desired/`) and the text report;\n")
	r.p("in the process this follows the last probe command, so it adds to the wall time one to one (the\n")
	r.p("load of the desired state overlaps the probe).\n\n")
	r.p("| host | time/op | B/op (median) | allocs/op (median) |\n|---|---|---:|---:|\n")
	for _, x := range rows {
		r.p("| %s | %s | %s | %s |\n", x.label, summarize(x.b.values["ns/op"]).spread(dur),
			qty(summarize(x.b.values["B/op"]).med), qty(summarize(x.b.values["allocs/op"]).med))
	}
}
