// Command report turns the raw outputs of one `make bench` run (e2e/bench.sh)
// into docs/benchmarks.md: the machine and versions, every figure with its
// spread over the repeated runs, the ratios measured side by side, and each
// target with PASS or MISS. It exits 1 when a target was missed, 2 when the
// raw outputs cannot be read.
//
// Usage: go run ./e2e/bench/report -raw DIR -o FILE
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

func main() {
	raw := flag.String("raw", "", "directory of the run's raw outputs")
	out := flag.String("o", "docs/benchmarks.md", "report to write")
	flag.Parse()
	if *raw == "" {
		fmt.Fprintln(os.Stderr, "usage: report -raw DIR [-o FILE]")
		os.Exit(2)
	}
	r, err := build(*raw)
	if err != nil {
		fmt.Fprintf(os.Stderr, "report: %v\n", err)
		os.Exit(2)
	}
	if err := writeAtomic(*out, r.text()); err != nil {
		fmt.Fprintf(os.Stderr, "report: %v\n", err)
		os.Exit(2)
	}
	missed := 0
	for _, t := range r.targets {
		fmt.Printf("%-6s %s: %s (target %s)\n", t.status, t.name, t.measured, t.target)
		if t.status == statusMiss {
			missed++
		}
	}
	if missed > 0 {
		fmt.Fprintf(os.Stderr, "report: %d target(s) missed\n", missed)
		os.Exit(1)
	}
}

func writeAtomic(path, text string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", path, err)
	}
	return nil
}

// stats is a sample summarized as count, minimum, median and maximum.
type stats struct {
	n             int
	min, med, max float64
}

func summarize(v []float64) stats {
	if len(v) == 0 {
		return stats{}
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stats{n: len(s), min: s[0], med: med, max: s[len(s)-1]}
}

// spread prints "median (min–max, n=N)" with f formatting each value.
func (s stats) spread(f func(float64) string) string {
	if s.n == 0 {
		return "—"
	}
	if s.n == 1 {
		return f(s.med) + " (n=1)"
	}
	return fmt.Sprintf("%s (%s–%s, n=%d)", f(s.med), f(s.min), f(s.max), s.n)
}

// dur formats nanoseconds with a unit fitting their size.
func dur(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.3g s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.3g ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.3g µs", ns/1e3)
	default:
		return fmt.Sprintf("%.3g ns", ns)
	}
}

// qty formats a count or byte figure with k/M/G (decimal) suffixes.
func qty(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.3gG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.3gk", v/1e3)
	default:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
}

func ratio(v float64) string { return fmt.Sprintf("%.2f×", v) }

const (
	statusPass = "PASS"
	statusMiss = "MISS"
	statusNone = "not measured"
	statusInfo = "reported" // a figure shown beside the targets, not a target
)

type target struct {
	name, target, measured, status string
}

type report struct {
	raw     string
	meta    map[string]string
	targets []target
	body    strings.Builder
}

func (r *report) addTarget(name, goal, measured string, ok bool) {
	st := statusMiss
	if ok {
		st = statusPass
	}
	r.targets = append(r.targets, target{name, goal, measured, st})
}

// info shows a figure in the targets table that no longer is a target.
func (r *report) info(name, goal, measured string) {
	r.targets = append(r.targets, target{name, goal, measured, statusInfo})
}

func (r *report) missing(name, goal, why string) {
	r.targets = append(r.targets, target{name, goal, why, statusNone})
}

func (r *report) p(format string, a ...any) { fmt.Fprintf(&r.body, format, a...) }

// read returns a raw output file, or "" when the part did not produce it.
func (r *report) read(name string) string {
	b, err := os.ReadFile(filepath.Join(r.raw, name))
	if err != nil {
		return ""
	}
	return string(b)
}

// failure is the reason bench.sh recorded for a part that could not run.
func (r *report) failure(part string) string {
	return strings.TrimSpace(r.read(part + ".failed"))
}

func (r *report) ran(part string) bool {
	return strings.Contains(","+r.meta["parts"]+",", ","+part+",")
}

// notRun explains in the report why a part has no figures.
func (r *report) notRun(part string) string {
	if !r.ran(part) {
		return "not measured: not in BENCH_ONLY for this run"
	}
	if f := r.failure(part); f != "" {
		return "not measured: the part failed: " + oneLine(f)
	}
	return "not measured: no output"
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func build(raw string) (*report, error) {
	r := &report{raw: raw, meta: map[string]string{}}
	m := r.read("meta.txt")
	if m == "" {
		return nil, fmt.Errorf("raw dir %s: no meta.txt", raw)
	}
	for _, l := range strings.Split(m, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			r.meta[k] = v
		}
	}
	r.config()
	r.scale()
	r.checkNode()
	r.guest()
	r.slopes()
	r.boot()
	r.bootCost()
	r.wipe()
	r.micro()
	return r, nil
}

func (r *report) text() string {
	var b strings.Builder
	m := r.meta
	b.WriteString("# Benchmarks\n\n")
	b.WriteString("GENERATED by `make bench` (`e2e/bench.sh`, report by `e2e/bench/report`); do not edit by hand —\n")
	b.WriteString("change the benchmarks or the notes in the generator and run `make bench` again. Every figure\n")
	b.WriteString("below comes from the one run described here. Spreads are \"median (min–max, n=runs)\".\n")
	b.WriteString("Measurements made by hand between runs (a change's before and after) are in\n")
	b.WriteString("[benchmark-history.md](benchmark-history.md).\n\n")
	if m["quick"] == "1" {
		b.WriteString("**This is a BENCH_QUICK=1 smoke run**: fewer repetitions and a short daemon window, so the\n")
		b.WriteString("spreads are wide and the daemon figures cover " + m["daemon_seconds"] + " s, not ten minutes.\n\n")
	}
	b.WriteString("## The run\n\n")
	b.WriteString("| | |\n|---|---|\n")
	rows := [][2]string{
		{"date", m["date"]},
		{"keel", m["commit"]},
		{"machine", fmt.Sprintf("%s CPUs (%s), %s RAM, kernel %s (no device-mapper: dm/LVM/VDO/bcache figures come from the qemu test guest)", m["cpus"], m["cpu"], m["mem"], m["kernel"])},
		{"tools", fmt.Sprintf("%s, cue %s, qemu %s, util-linux %s", m["go"], m["cue"], m["qemu"], m["utillinux"])},
		{"test guest", r.guestVersions()},
		{"load average (1/5/15 min)", fmt.Sprintf("before %s, after %s (a shared machine: other jobs ran alongside)", m["load_before"], m["load_after"])},
		{"mode", fmt.Sprintf("BENCH_QUICK=%s; Go benchmarks -count %s; process timings %s rounds; guest rounds %s; daemon window %s s; wipe %s", m["quick"], m["count"], m["rounds"], m["guest_rounds"], m["daemon_seconds"], m["wipe"])},
		{"parts", m["parts"] + " (the guest parts — guest, boot — run first, alone, then the host parts, then wipe)"},
		{"wall time of the run", m["wall_seconds"] + " s"},
	}
	if f := m["failed"]; f != "" {
		rows = append(rows, [2]string{"parts that could not run", f})
	}
	for _, row := range rows {
		fmt.Fprintf(&b, "| %s | %s |\n", row[0], row[1])
	}
	b.WriteString("\n## Targets\n\n")
	b.WriteString("A missed target makes `make bench` exit non-zero after writing this file; the tests do not fail.\n\n")
	b.WriteString("| target | goal | measured | result |\n|---|---|---|---|\n")
	for _, t := range r.targets {
		res := t.status
		if t.status == statusPass || t.status == statusMiss {
			res = "**" + res + "**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t.name, t.target, t.measured, res)
	}
	b.WriteString("\n")
	b.WriteString(r.body.String())
	return b.String()
}

// guestVersions picks the guest's kernel and package versions from its log
// (the harness prints them before every scenario).
func (r *report) guestVersions() string {
	g := r.read("guest.txt")
	if g == "" {
		return "not booted in this run"
	}
	var parts []string
	kre := regexp.MustCompile(`(?m)^kernel: (\S+)`)
	if k := kre.FindStringSubmatch(g); k != nil {
		parts = append(parts, "kernel "+k[1])
	}
	if c := regexp.MustCompile(`(?m)^cmdline (.*)$`).FindStringSubmatch(g); c != nil {
		parts = append(parts, "kernel command line `"+strings.TrimSpace(c[1])+"`")
	}
	if l := regexp.MustCompile(`LVM version:\s+(\S+)`).FindStringSubmatch(g); l != nil {
		parts = append(parts, "lvm2 "+l[1])
	}
	if v := regexp.MustCompile(`vdoformat version is:?\s*(\S+)`).FindStringSubmatch(g); v != nil {
		parts = append(parts, "vdo "+v[1])
	}
	accel := "TCG unless KVM works (docs/testing.md)"
	if a := regexp.MustCompile(`accel=(\S+)`).FindStringSubmatch(r.read("guest-vm.txt")); a != nil {
		accel = a[1]
	}
	parts = append(parts, "qemu accel "+accel+": guest figures compare with each other, not with bare metal")
	return strings.Join(parts, ", ")
}

// --- Go benchmark output ------------------------------------------------

type benchResult struct {
	pkg, name string
	values    map[string][]float64 // unit -> one value per run
	units     []string
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(.+)$`)

// parseBench reads `go test -bench` output, one result per benchmark name
// with every run's figures, in the order they first appear.
func parseBench(text string) []*benchResult {
	var out []*benchResult
	byName := map[string]*benchResult{}
	pkg := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimPrefix(strings.TrimSpace(p), "github.com/keel-storage/keel/")
			continue
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		key := pkg + " " + m[1]
		br := byName[key]
		if br == nil {
			br = &benchResult{pkg: pkg, name: m[1], values: map[string][]float64{}}
			byName[key] = br
			out = append(out, br)
		}
		f := strings.Fields(m[3])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			u := f[i+1]
			if _, seen := br.values[u]; !seen {
				br.units = append(br.units, u)
			}
			br.values[u] = append(br.values[u], v)
		}
	}
	return out
}

func findBench(rs []*benchResult, name string) *benchResult {
	for _, b := range rs {
		if b.name == name {
			return b
		}
	}
	return nil
}

// --- configuration ------------------------------------------------------

func (r *report) config() {
	r.p("## Configuration: `keel vet` against `cue vet` (schema/)\n\n")
	const goal = "keel/cue ≤ 1.00"
	text := r.read("vet.txt")
	var keel, cue, ratios []float64
	files := ""
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "files":
			files = f[1]
		case "keel":
			keel = append(keel, v)
		case "cue":
			cue = append(cue, v)
			if len(keel) == len(cue) && v > 0 {
				ratios = append(ratios, keel[len(keel)-1]/v)
			}
		}
	}
	if len(keel) == 0 || len(cue) == 0 {
		why := r.notRun("config")
		r.p("%s.\n\n", why)
		r.missing("`keel vet` ≤ `cue vet` on the examples", goal, why)
		return
	}
	ks, cs, rs := summarize(keel), summarize(cue), summarize(ratios)
	n, _ := strconv.ParseFloat(files, 64)
	if n == 0 {
		n = 1
	}
	perFile := func(ns float64) string { return dur(ns / n) }
	r.p("Both tools check each of the %s examples (`examples/*.cue`) in its own process, the same schema files\n", files)
	r.p("for both (`cue vet -c schema/keel.cue schema/root.cue FILE`); the examples share disks, so they are not one\n")
	r.p("desired state. Rounds are interleaved (all keel, then all cue), so load from other processes hits\n")
	r.p("both alike; the ratio is taken per round and summarized. keel is the stripped static binary\n")
	r.p("(`CGO_ENABLED=0 -trimpath -ldflags '-s -w'`).\n\n")
	r.p("| tool | per file: median (min–max, n=rounds) |\n|---|---|\n")
	r.p("| `keel vet FILE` | %s |\n", ks.spread(perFile))
	r.p("| `cue vet -c ... FILE` | %s |\n", cs.spread(perFile))
	r.p("| ratio keel/cue, per round | %s |\n\n", rs.spread(ratio))
	r.addTarget("`keel vet` ≤ `cue vet` on the examples", goal, ratio(rs.med)+" (median of per-round ratios)", rs.med <= 1.0)
	r.p("Most of a load is CUE evaluating the schema's size arithmetic (the `regexp`/`strconv` builtins\n")
	r.p("behind the range checks on sizes) and Go's GC; keel's own checks and the VDO arithmetic do not\n")
	r.p("show in the profile. The in-process loader figures are in the Go benchmarks of `schema` below\n")
	r.p("(LoadColdLargestExample is one `keel vet` without process start).\n\n")
}

// --- scale --------------------------------------------------------------

func (r *report) scale() {
	r.p("## Scale: probe-parse plus plan, 1,000 / 10,000 / 50,000 LVs (reconcile/plan/)\n\n")
	res := parseBench(r.read("scale.txt"))
	get := func(kind string, n int) *benchResult {
		return findBench(res, fmt.Sprintf("BenchmarkScale/%s/lvs=%d", kind, n))
	}
	if get("plan", 10000) == nil {
		why := r.notRun("scale")
		r.p("%s.\n\n", why)
		r.missing("plan of 10,000 LVs", "< 20 ms", why)
		return
	}
	r.p("`go test -run '^$' -bench '^BenchmarkScale$' -benchmem -count %s ./reconcile/plan/`\n", r.meta["count"])
	r.p("(`reconcile/plan/scale_bench_test.go`). The synthetic host is grown in the test (`makeSynthHost` in\n")
	r.p("`reconcile/plan/bench_test.go`) from the guest capture `probes/testdata/snapshots/vdo-on-bcache.txtar`:\n")
	r.p("the VG holding the split VDO pool is replicated 64 times in the `lvm fullreport` JSON (names and\n")
	r.p("UUIDs rewritten), with its `dmsetup table`/`status` lines, its `dmsetup message … stats` output and\n")
	r.p("its on-disk geometry reads; bcache0's sysfs files are replicated into 64 bcache devices; the VM\n")
	r.p("disk of the stacked VG is replicated until the host has the wanted number of LVs. The desired\n")
	r.p("state declares all 64 pools and all 64 bcache devices. `probeplan` replays the probe pass through\n")
	r.p("`probes.Probe` (the full report, dmsetup, sysfs, VDO geometry) and plans; `plan` is `Plan` alone.\n\n")
	r.p("| case | LVs | time/op | B/op (median) | allocs/op (median) |\n|---|---:|---|---:|---:|\n")
	for _, kind := range []string{"probeplan", "plan"} {
		for _, n := range []int{1000, 10000, 50000} {
			b := get(kind, n)
			if b == nil {
				r.p("| %s | %d | missing | | |\n", kind, n)
				continue
			}
			r.p("| %s | %d,%03d | %s | %s | %s |\n", kind, n/1000, n%1000, summarize(b.values["ns/op"]).spread(dur),
				qty(summarize(b.values["B/op"]).med), qty(summarize(b.values["allocs/op"]).med))
		}
	}
	r.p("\nGrowth (medians). Linear growth with a fixed per-pool part gives a 50k/1k ratio of at most 50;\n")
	r.p("the slope is the extra cost of one more LV, from the 1,000 to the 50,000 point.\n\n")
	r.p("| case | figure | 50k/1k (linear ≤ 50) | 10k/1k (linear ≤ 10) | slope per LV |\n|---|---|---:|---:|---:|\n")
	for _, kind := range []string{"probeplan", "plan"} {
		a, m, z := get(kind, 1000), get(kind, 10000), get(kind, 50000)
		if a == nil || m == nil || z == nil {
			continue
		}
		for _, u := range []string{"ns/op", "allocs/op", "B/op"} {
			x, y, w := summarize(a.values[u]).med, summarize(m.values[u]).med, summarize(z.values[u]).med
			if x == 0 {
				continue
			}
			slope := (w - x) / 49000
			ss := fmt.Sprintf("%.3g %s", slope, strings.TrimSuffix(u, "/op"))
			if u == "ns/op" {
				ss = dur(slope)
			}
			r.p("| %s | %s | %.1f | %.1f | %s |\n", kind, u, w/x, y/x, ss)
			if kind == "probeplan" && u != "B/op" {
				r.addTarget("probe+plan grows linearly ("+u+")", "50k/1k ≤ 50", fmt.Sprintf("%.1f", w/x), w/x <= 50)
			}
		}
	}
	r.p("\nWhere the time ratio exceeds 50 while the allocation ratio stays under it, the extra time is\n")
	r.p("most likely the garbage collector working through a larger heap (see B/op), not code whose work\n")
	r.p("grows faster than the LVs; compare the 10k/1k column. The GC's background workers need the\n")
	r.p("machine's idle CPU, so other load slows the 50,000-LV case more than the 1,000-LV one.\n")
	p := summarize(get("plan", 10000).values["ns/op"])
	r.addTarget("plan of 10,000 LVs (64 VDO pools, 64 bcache)", "< 20 ms", p.spread(dur), p.med < 20e6)
	r.p("\nThe plan's cost is per pool and per bcache device (layout arithmetic, thread layout, RAM bill),\n")
	r.p("plus one map entry per LV (the device-mapper name index), so its allocations stay nearly flat. An\n")
	r.p("earlier planner built two path strings per LV, and its allocations grew with the LVs; indexing PVs\n")
	r.p("on LVs from the PV side removed them. Parsing dominates probe+plan. `probes.parseFullReport` reads\n")
	r.p("the full report (since 6bc698b the 23 LV and 31 segment fields keel reads; `lv_all` and `seg_all`\n")
	r.p("gave 103 and 55, and the synthetic hosts and captures parsed here still carry them all) with a\n")
	r.p("decoder for that one JSON shape instead of `encoding/json`: row keys are interned, the rows of a\n")
	r.p("subreport share one key list and index (`model.Fields`, not a map per row), and their values\n")
	r.p("share strings and offset arrays a few dozen rows at a time; a test and a fuzz target hold it to\n")
	r.p("`encoding/json`'s result. Every field of the report is kept (`LV.Fields`, `Segment.Fields`, printed by\n")
	r.p("`keel status --format json` as the maps were). The older `BenchmarkPlan` and `BenchmarkProbePlan`\n")
	r.p("(1,000–10,000 LVs) measure the same code and are not run by `make bench`.\n\n")
}

// --- keel check --node --------------------------------------------------

func (r *report) checkNode() {
	r.p("## `keel check --node` on each bundled snapshot (process wall time)\n\n")
	type row struct {
		args, rc string
		v        []float64
	}
	rows := map[string]*row{}
	var names []string
	for _, l := range strings.Split(r.read("checknode.txt"), "\n") {
		f := strings.Fields(l)
		if len(f) < 4 {
			continue
		}
		v, _ := strconv.ParseFloat(f[1], 64)
		if rows[f[0]] == nil {
			rows[f[0]] = &row{args: strings.Join(f[3:], " "), rc: f[2]}
			names = append(names, f[0])
		}
		rows[f[0]].v = append(rows[f[0]].v, v)
	}
	if len(names) == 0 {
		r.p("%s.\n\n", r.notRun("check"))
		return
	}
	r.p("`keel check ARGS --node examples/nodes/NAME.txtar`, one process per run (start, load of the\n")
	r.p("desired state with the embedded schema, replay of the recorded probe pass, plan, text report).\n")
	r.p("Exit 1 means findings at warning or above, which these recorded hosts have on purpose.\n\n")
	r.p("| snapshot | args | exit | wall time |\n|---|---|---:|---|\n")
	for _, n := range names {
		x := rows[n]
		r.p("| %s | `%s` | %s | %s |\n", n, x.args, x.rc, summarize(x.v).spread(dur))
	}
	r.p("\n")
}

// --- the guest ----------------------------------------------------------

// --- boot ---------------------------------------------------------------

func (r *report) boot() {
	r.p("## Boot (test guest)\n\n")
	r.p("Building the guest image itself is not part of `make bench`: `e2e/image/build.sh` records its own\n")
	r.p("build time as `build_seconds` in the cache directory's `versions.txt` (docs/testing.md).\n\n")
	bf := findBench(parseBench(r.read("bootfast.txt")), "BenchmarkBootFast")
	if bf == nil {
		r.p("Bare boot: %s.\n\n", r.notRun("boot"))
	} else {
		r.p("`BenchmarkBootFast` (`go test -tags e2e -run '^$' -bench BootFast -benchtime 1x ./e2e/guest/`): a\n")
		r.p("fast-flavour boot with an empty scenario, lock wait included in the wall time:\n\n")
		r.p("| figure | value |\n|---|---|\n")
		r.p("| wall time per boot | %s |\n", summarize(bf.values["ns/op"]).spread(dur))
		r.p("| guest uptime when the scenario starts | %s |\n\n", summarize(bf.values["guest-s/op"]).spread(func(s float64) string { return dur(s * 1e9) }))
	}
	b := r.read("boot.txt")
	re := regexp.MustCompile(`keel-activate start to READY: (\d+) ms \(guest wall ([0-9.]+)s\)`)
	var ready []float64
	var wall []float64
	for _, m := range re.FindAllStringSubmatch(b, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		w, _ := strconv.ParseFloat(m[2], 64)
		ready = append(ready, v)
		wall = append(wall, w)
	}
	if len(ready) == 0 {
		why := r.notRun("boot")
		if r.ran("boot") && r.failure("boot") == "" && b == "" {
			why = "not measured: e2e/boot does not exist in this tree"
		}
		r.p("`keel-activate` start to READY: %s.\n\n", why)
		return
	}
	r.p("`keel-activate` start to READY in the systemd guest (`e2e/boot`, TestRebootIsBoring: the second\n")
	r.p("of three boots of one machine, with the stack of `examples/vdo-on-bcache.cue` already built):\n")
	r.p("%s (the harness's wall time for that boot, a queue wait for the qemu lock possibly included: %s).\n\n", summarize(ready).spread(func(v float64) string { return dur(v * 1e6) }),
		summarize(wall).spread(func(s float64) string { return dur(s * 1e9) }))
}

// --- wipe ---------------------------------------------------------------

// wipeRun is one e2e/bench-wipe.sh output: whole-process times per tool in
// run order, keel's time inside the engine, and the fixed-cost rounds.
type wipeRun struct {
	header []string
	mib    float64
	times  map[string][]float64 // keel, keel-engine, blkdiscard, dd-1M
	fixed  map[string][]float64 // keel, blkdiscard with --length 1M
}

var (
	wipeRow   = regexp.MustCompile(`^\d+\s+(keel|keel-engine|blkdiscard|dd-1M)\s+([0-9.]+)\s+\d+$`)
	wipeFixed = regexp.MustCompile(`^fixed\s+\d+\s+(keel|blkdiscard)\s+([0-9.]+)$`)
	wipeSize  = regexp.MustCompile(`on a (\d+) MiB`)
)

func parseWipe(text string) wipeRun {
	w := wipeRun{times: map[string][]float64{}, fixed: map[string][]float64{}}
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "# fixed cost"):
		case strings.HasPrefix(l, "# "), strings.HasPrefix(l, "write_zeroes_max_bytes at the end"),
			strings.HasPrefix(l, "load average at the end"):
			w.header = append(w.header, strings.TrimPrefix(l, "# "))
			if m := wipeSize.FindStringSubmatch(l); m != nil {
				w.mib, _ = strconv.ParseFloat(m[1], 64)
			}
		}
		if m := wipeRow.FindStringSubmatch(l); m != nil {
			v, _ := strconv.ParseFloat(m[2], 64)
			w.times[m[1]] = append(w.times[m[1]], v)
		}
		if m := wipeFixed.FindStringSubmatch(l); m != nil {
			v, _ := strconv.ParseFloat(m[2], 64)
			w.fixed[m[1]] = append(w.fixed[m[1]], v)
		}
	}
	return w
}

func (r *report) wipe() {
	r.p("## Safe removal: zero-out throughput (reconcile/apply/wipe)\n\n")
	secs := func(v float64) string { return dur(v * 1e9) }
	found := false
	for _, path := range []struct{ file, title, what string }{
		{"wipe-fallback.txt", "Fallback path (backing file on tmpfs)", "tmpfs has no fallocate ZERO_RANGE, so the loop device drops WRITE ZEROES and the kernel writes zero pages: bandwidth-bound, the copying done by the loop device's worker on the same two CPUs as the machine's other load."},
		{"wipe-offload.txt", "Offload path (backing file on the build machine's file system)", "the loop device turns WRITE ZEROES into fallocate(ZERO_RANGE); each ioctl costs what the kernel spends dropping the backing file's cached pages of the range (the fill leaves them cached), so the device is made large enough that this outweighs each tool's fixed cost."},
	} {
		w := parseWipe(r.read(path.file))
		if len(w.times["keel"]) == 0 || len(w.times["blkdiscard"]) == 0 {
			continue
		}
		found = true
		// per-run ratio: the three tools run back to back in each run
		var per []float64
		for i, k := range w.times["keel"] {
			if i < len(w.times["blkdiscard"]) && k > 0 {
				per = append(per, w.times["blkdiscard"][i]/k)
			}
		}
		r.p("### %s\n\n%s %s\n\n", path.title, path.what, strings.Join(w.header, " "))
		r.p("| tool | time | MiB/s at the median | vs blkdiscard (its median / the tool's) |\n|---|---|---:|---:|\n")
		bmed := summarize(w.times["blkdiscard"]).med
		for _, t := range []struct{ key, label string }{
			{"keel", "keel (whole process)"},
			{"keel-engine", "keel, inside the engine only (`wipe.Wipe`, same runs)"},
			{"blkdiscard", "blkdiscard (whole process)"},
			{"dd-1M", "dd-1M (whole process)"},
		} {
			s := summarize(w.times[t.key])
			if s.n == 0 {
				continue
			}
			rate := "—"
			if w.mib > 0 && s.med > 0 {
				rate = fmt.Sprintf("%.0f", w.mib/s.med)
			}
			vs := ratio(bmed / s.med)
			if t.key == "keel-engine" {
				vs = "— (not a whole process)"
			}
			r.p("| %s | %s | %s | %s |\n", t.label, s.spread(secs), rate, vs)
		}
		r.p("\nPer run, blkdiscard's time / keel's: %s.\n\n", summarize(per).spread(ratio))
		fk, fb := summarize(w.fixed["keel"]), summarize(w.fixed["blkdiscard"])
		if fk.n > 0 && fb.n > 0 {
			r.p("Fixed cost of each tool (`--length 1M`: one ioctl of 1 MiB, so process start, the checks before\n")
			r.p("the first ioctl and exit; timed from the shell like the runs above, interleaved): keel %s,\n", fk.spread(secs))
			r.p("blkdiscard %s; blkdiscard's median / keel's %s.\n\n", fb.spread(secs), ratio(fb.med/fk.med))
		}
		km := summarize(w.times["keel"]).med
		r.addTarget("wipe vs `blkdiscard --zeroout`, "+strings.ToLower(strings.SplitN(path.title, " (", 2)[0]), "≥ 0.95×",
			fmt.Sprintf("%s (medians of whole processes; per run %s)", ratio(bmed/km), ratio(summarize(per).med)), bmed/km >= 0.95)
	}
	if !found {
		why := r.notRun("wipe")
		r.p("%s.\n\n", why)
		r.missing("wipe vs `blkdiscard --zeroout`", "≥ 0.95×", why)
		return
	}
	r.p("`e2e/bench-wipe.sh SIZE_MIB RUNS` (root) runs after the guest parts: keel's engine\n")
	r.p("(`e2e/wipe/zerobench`, the same `wipe.Wipe` loop `keel wipe` uses, BLKZEROOUT in 32 MiB steps)\n")
	r.p("against `blkdiscard --zeroout --step 32M` and a 1 MiB write loop as cstream does (`dd if=/dev/zero\n")
	r.p("bs=1M oflag=direct conv=fsync`), on one loop device, interleaved in rotating order; each run starts\n")
	r.p("from a device filled with written blocks (not timed) and checks that the first and last 4 KiB\n")
	r.p("read back as zeroes. The target compares whole processes, medians over all runs. keel and\n")
	r.p("blkdiscard issue the same ioctl sequence (the same ranges; strace shows no other call between\n")
	r.p("them), so their difference is their fixed cost, measured separately above, and the load of the\n")
	r.p("shared 2-CPU machine, which the load averages in each header show; where the ranges overlap read\n")
	r.p("a lead as \"no slower\", not as a real gain. The engine's own cost per step is `BenchmarkStepLoop`\n")
	r.p("below. Discard on a VDO-backed LV with max_discard 1 is slow in the guest (4 KiB per request):\n")
	r.p("see docs/removal.md.\n\n")
}

// --- the other Go benchmarks --------------------------------------------

var microNotes = map[string]string{
	"schema":                   "Inputs: the examples; LoadColdLargestExample is one `keel vet` of proxmox-vdo-thick.cue without process start, LoadLargestExample the same with a reused Loader, VetInvalid a file rejected with one problem.",
	"lvm/vdo":                  "The VDO arithmetic: Sizing is NewLayout + AutoThreads + RAMBill of a 40 GiB pool, MaxThick the bisection for the largest thick logical size of a 1 TiB pool, AutoThreads 64 CPUs over the six thread types. Nothing allocates; next to one `lvs` call (tens of ms) none of it matters.",
	"probes":                   "On the `mixed` guest snapshot (split VDO pool, thin pool with one thin LV, writeback bcache): ProbeReplay is a whole pass with I/O replayed from memory, ParseFullReport the `lvm fullreport` JSON alone, SnapshotRoundTrip MarshalText + ParseSnapshot. ParseFullReportScale and BuildObjectsScale are on the captured 2,000-thin-LV host: the report decoded and built, and the build alone (what keel check does after the report ends; the decoding runs while LVM writes). keel's own work in a pass is milliseconds; the pass is bound by the commands it runs.",
	"reconcile/activation":     "The boot activation order (Compute) and the udev rules (Rules) on a guest snapshot.",
	"reconcile/apply/lvmconf":  "On trixie's stock lvm.conf (from the probes' node snapshot): EditStock asserts scan_lvs, use_devicesfile and global_filter; ReadStock reads the managed settings with nothing to change. Edit's allocations are the copy of the file per replaced or inserted value.",
	"reconcile/apply/wipe":     "StepLoop: the stepping engine over a device that does no I/O (3200 steps of 32 MiB per op), i.e. keel's own cost per step against about 10 ms of real zeroing per step.",
	"cmd/keel/internal/uevent": "Parse: one kernel uevent datagram (a bcache registration captured in the guest).",
}

func (r *report) micro() {
	r.p("## Building blocks: the other Go benchmarks\n\n")
	res := parseBench(r.read("micro.txt"))
	if len(res) == 0 {
		r.p("%s.\n\n", r.notRun("micro"))
		return
	}
	r.p("`go test -run '^$' -bench . -benchmem -count %s` over schema, lvm/vdo, probes,\n", r.meta["count"])
	r.p("reconcile/activation, reconcile/apply/lvmconf, reconcile/apply/wipe and cmd/keel/internal/uevent.\n\n")
	pkg := ""
	for _, b := range res {
		if b.pkg != pkg {
			pkg = b.pkg
			r.p("\n### %s\n\n", pkg)
			if n := microNotes[pkg]; n != "" {
				r.p("%s\n\n", n)
			}
			r.p("| benchmark | time/op | B/op | allocs/op | other |\n|---|---|---:|---:|---|\n")
		}
		var other []string
		for _, u := range b.units {
			switch u {
			case "ns/op", "B/op", "allocs/op":
			default:
				other = append(other, fmt.Sprintf("%s %s", qty(summarize(b.values[u]).med), u))
			}
		}
		r.p("| %s | %s | %s | %s | %s |\n", strings.TrimPrefix(b.name, "Benchmark"),
			summarize(b.values["ns/op"]).spread(dur), qty(summarize(b.values["B/op"]).med),
			qty(summarize(b.values["allocs/op"]).med), strings.Join(other, ", "))
	}
	r.p("\n")
}
