package main

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// guestSize holds what e2e/bench/guest.sh measured at one size of the
// host: the lines after its "size TAG LVS ACTIVE" line.
type guestSize struct {
	tag          string
	lvs, active  int
	build        float64 // seconds to build this size from the one before; -1 when not built
	probeArgv    map[string]string
	probe        map[string][]float64
	check, pass  []float64
	timing       []map[string]float64 // per round: check-timing's marks, ms since main started
	parts        map[string][]float64 // check-cold, check-exec, pass-exec, start, vet, check-node, lvs, status
	passOps      [][2]string          // duration, operation: the slowest in the last round's pass
	d            map[string]float64   // daemon-* figures
	reactConfig  []float64
	reactBcache  []float64
	timeouts     map[string]int
	hasDaemon    bool
	fullreportID string
}

func newGuestSize(tag string) *guestSize {
	return &guestSize{tag: tag, build: -1, probeArgv: map[string]string{}, probe: map[string][]float64{},
		parts: map[string][]float64{}, d: map[string]float64{}, timeouts: map[string]int{}}
}

// label names a size in the report.
func (g *guestSize) label() string {
	switch g.tag {
	case "50":
		return fmt.Sprintf("~50 LVs (%d, %d active)", g.lvs, g.active)
	case "2000":
		return fmt.Sprintf("2,000 on VDO (%d LVs, %d active)", g.lvs, g.active)
	case "2000-thin":
		return fmt.Sprintf("2,000 thin (%d LVs, %d active)", g.lvs, g.active)
	case "bcache":
		return fmt.Sprintf("bcache only (%d LVs)", g.lvs)
	}
	return fmt.Sprintf("%s (%d LVs, %d active)", g.tag, g.lvs, g.active)
}

// parseGuest splits guest.txt into its sizes; lines before the first
// "size" line (the converge's check-exit) go to a size tagged "".
func parseGuest(text string) (sizes []*guestSize, checkExit string) {
	cur := newGuestSize("")
	sizes = []*guestSize{cur}
	builds := map[string]float64{}
	num := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		switch {
		case f[0] == "size" && len(f) == 4:
			cur = newGuestSize(f[1])
			cur.lvs, _ = strconv.Atoi(f[2])
			cur.active, _ = strconv.Atoi(f[3])
			if b, ok := builds[f[1]]; ok {
				cur.build = b
			}
			sizes = append(sizes, cur)
		case f[0] == "build" && len(f) == 3:
			builds[f[1]] = num(f[2])
		case f[0] == "probecmd" && len(f) > 2:
			cur.probeArgv[f[1]] = strings.Join(f[2:], " ")
			if f[2] == "lvm" && f[3] == "fullreport" {
				cur.fullreportID = f[1]
			}
		case f[0] == "probe" && len(f) == 3:
			cur.probe[f[1]] = append(cur.probe[f[1]], num(f[2]))
		case f[0] == "check" && len(f) == 2:
			cur.check = append(cur.check, num(f[1]))
		case f[0] == "check-timing":
			cur.timing = append(cur.timing, parseMarks(strings.Join(f[1:], " ")))
		case f[0] == "check-exit":
			checkExit = f[1]
		case f[0] == "pass" || f[0] == "pass-exec":
			if dd, err := time.ParseDuration(f[1]); err == nil {
				if f[0] == "pass" {
					cur.pass = append(cur.pass, dd.Seconds())
				} else {
					cur.parts[f[0]] = append(cur.parts[f[0]], dd.Seconds())
				}
			}
		case f[0] == "passop" && len(f) > 2:
			cur.passOps = append(cur.passOps, [2]string{f[1], strings.Join(f[2:], " ")})
		case len(f) == 2 && (f[0] == "check-exec" || f[0] == "check-cold" || f[0] == "start" || f[0] == "vet" ||
			f[0] == "check-node" || f[0] == "lvs" || f[0] == "status" || f[0] == "frmem"):
			cur.parts[f[0]] = append(cur.parts[f[0]], num(f[1]))
		case strings.HasPrefix(f[0], "daemon-") && len(f) == 2:
			cur.d[strings.TrimPrefix(f[0], "daemon-")] = num(f[1])
			cur.hasDaemon = true
		case f[0] == "react-config":
			cur.reactConfig = append(cur.reactConfig, num(f[1]))
		case f[0] == "react-bcache":
			cur.reactBcache = append(cur.reactBcache, num(f[1]))
		case strings.HasSuffix(f[0], "-timeout"):
			cur.timeouts[strings.TrimSuffix(f[0], "-timeout")]++
		}
	}
	return sizes, checkExit
}

// parseMarks reads a KEEL_TIMING line's marks, "NAME Nms, NAME Nms, ...".
func parseMarks(s string) map[string]float64 {
	m := map[string]float64{}
	for _, mark := range strings.Split(s, ", ") {
		i := strings.LastIndex(mark, " ")
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSuffix(mark[i+1:], "ms"), 64); err == nil {
			m[mark[:i]] = v
		}
	}
	return m
}

// checkParts splits, per round, the part of a keel check process beyond
// lvm fullreport alone and keel version by its KEEL_TIMING marks (seconds):
// before the report started, the report's own time inside the check less
// its time alone, and from its end to the check's report.
func (g *guestSize) checkParts() (before, slower, after []float64) {
	fr := g.probe[g.fullreportID]
	for i, m := range g.timing {
		s, okS := m["lvm fullreport started"]
		e, okE := m["lvm fullreport ended"]
		rep, okR := m["report"]
		if !okS || !okE || !okR {
			continue
		}
		before = append(before, s/1000)
		if i < len(fr) {
			slower = append(slower, (e-s)/1000-fr[i])
		}
		after = append(after, (rep-e)/1000)
	}
	return before, slower, after
}

func sec(s float64) string { return dur(s * 1e9) }

// signedSec is sec for a difference, which may be below zero.
func signedSec(s float64) string {
	if s < 0 {
		return "−" + sec(-s)
	}
	return sec(s)
}
func msec(v float64) string { return dur(v * 1e6) }

// probeIDs lists a size's probe commands in their order.
func (g *guestSize) probeIDs() []string {
	ids := make([]string, 0, len(g.probeArgv))
	for id := range g.probeArgv {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { a, _ := strconv.Atoi(ids[i]); b, _ := strconv.Atoi(ids[j]); return a < b })
	return ids
}

// checkRatios are, per round, keel check / (lvm fullreport + keel version)
// (the target's form) and keel check / lvm fullreport (the old form).
func (g *guestSize) checkRatios() (withStart, alone []float64) {
	fr, st := g.probe[g.fullreportID], g.parts["start"]
	for i, c := range g.check {
		if i < len(fr) && fr[i] > 0 {
			alone = append(alone, c/fr[i])
			if i < len(st) {
				withStart = append(withStart, c/(fr[i]+st[i]))
			}
		}
	}
	return withStart, alone
}

// memRatios are, per round, keel check / (lvm fullreport with its output
// into a file in memory + keel version): keel's cost beyond what any
// reader pays to receive the report. Empty when the raw outputs have no
// frmem lines.
func (g *guestSize) memRatios() []float64 {
	var out []float64
	fm, st := g.parts["frmem"], g.parts["start"]
	for i, c := range g.check {
		if i < len(fm) && i < len(st) && fm[i]+st[i] > 0 {
			out = append(out, c/(fm[i]+st[i]))
		}
	}
	return out
}

func shortArgv(s string) string {
	if len(s) > 60 {
		return s[:60] + " …"
	}
	return s
}

func (r *report) guest() {
	sizes, checkExit := parseGuest(r.read("guest.txt"))
	var measured, daemons, bcaches []*guestSize
	for _, g := range sizes {
		if len(g.check) > 0 {
			measured = append(measured, g)
		}
		if g.hasDaemon {
			daemons = append(daemons, g)
		}
		if len(g.reactBcache) > 0 || g.timeouts["react-bcache"] > 0 {
			bcaches = append(bcaches, g)
		}
	}

	r.p("## `keel check` on the real kernel against its probe commands alone (test guest)\n\n")
	if len(measured) == 0 {
		why := r.notRun("guest")
		r.p("%s.\n\n", why)
		r.missing("`keel check` ≤ `lvm fullreport` + `keel version` + 5% (guest)", "≤ 1.05×", why)
	} else {
		r.guestDetail(measured[0], checkExit)
	}
	if len(measured) > 0 {
		r.guestSides(measured)
	}
	r.daemonSection(daemons, bcaches)
}

// guestDetail is the table of the first measured size, command by command.
func (r *report) guestDetail(g *guestSize, checkExit string) {
	r.p("One boot of the test guest (`e2e/bench/guest.sh`, disks nvme0 20G, hdd1 60G, ssd2 8G, nvme3 4G, 3G RAM):\n")
	r.p("`examples/vdo-on-bcache.cue` converged by `keel apply` from blank disks (a writeback bcache, a split\n")
	r.p("VDO pool with its middle on bcache0, a VG stacked on the VDO LV; `keel check` exit afterwards: %s),\n", checkExit)
	r.p("then 48 VM disks of 4 MiB on the stacked VG, all active: %s. This section is that size; the\n", g.label())
	r.p("next one sets it beside 2,000 LVs. The probe commands are the ones keel's own command log lists\n")
	r.p("for a pass; each round runs every one of them alone, then one whole `keel check -c /etc/keel`\n")
	r.p("process, then `keel snapshot -v` for the in-process probe pass. keel runs from the guest's RAM\n")
	r.p("root, not the 9p share (paging the static binary in over 9p under TCG costs seconds and once made\n")
	r.p("a probe pass look seven times slower).\n\n")
	r.p("| command | wall time |\n|---|---|\n")
	ids := g.probeIDs()
	for _, id := range ids {
		r.p("| `%s` | %s |\n", shortArgv(g.probeArgv[id]), summarize(g.probe[id]).spread(sec))
	}
	var sums []float64
	for i := range g.check {
		sum := 0.0
		for _, id := range ids {
			if i < len(g.probe[id]) {
				sum += g.probe[id][i]
			}
		}
		sums = append(sums, sum)
	}
	r.p("| all of the above one after another (sum per round) | %s |\n", summarize(sums).spread(sec))
	r.p("| **`keel check` (whole process)** | %s |\n", summarize(g.check).spread(sec))
	r.p("| keel's probe pass in-process (`keel snapshot -v`) | %s |\n\n", summarize(g.pass).spread(sec))
	r.p("Where a `keel check` process spends its time (same rounds; each row is its own process):\n\n")
	r.p("| part | wall time |\n|---|---|\n")
	for _, row := range [][2]string{
		{"start", "`keel version` (process start and exit)"},
		{"vet", "`keel vet -c /etc/keel` (start + load of the desired state with the embedded schema)"},
		{"check-cold", "`keel check` with `KEEL_CACHE_DIR=off` (the desired state validated by CUE, as on the first check after a change)"},
		{"check-node", "`keel check --node` of this host's snapshot (start, load, replayed pass, plan, report; no commands)"},
		{"check-exec", "`keel check` with `KEEL_DM_IOCTL=off` (the dmsetup reads run as processes)"},
		{"pass-exec", "probe pass with `KEEL_DM_IOCTL=off` (`keel snapshot -v`)"},
	} {
		if v := g.parts[row[0]]; len(v) > 0 {
			r.p("| %s | %s |\n", row[1], summarize(v).spread(sec))
		}
	}
	r.p("\n")
	if len(g.passOps) > 0 {
		r.p("The slowest operations inside the last round's in-process pass (`keel snapshot -v`; they overlap):\n\n")
		r.p("| operation | time |\n|---|---|\n")
		for _, op := range g.passOps {
			r.p("| `%s` | %s |\n", shortArgv(op[1]), op[0])
		}
		r.p("\n")
	}
	r.p("A pass starts `lvm fullreport`; `lvmconfig --typeconfig full` runs beside it on the guest's 2\n")
	r.p("vCPUs only when something it reads changed since it last ran (docs/check.md, the lvmconfig\n")
	r.p("cache), so the rounds' checks start one process; `dmsetup table`, `dmsetup status` and `dmsetup message <pool> 0 stats` are\n")
	r.p("listed above as the commands they stand for, but keel answers them in-process with the\n")
	r.p("device-mapper ioctls on /dev/mapper/control (byte-identical output, proved by e2e/probes), and\n")
	r.p("reads sysfs directly; the statistics message starts as soon as the table is in, while `lvm\n")
	r.p("fullreport` still runs. `keel check` loads the desired state while the pass runs; the rounds'\n")
	r.p("`keel check` finds it in the desired-state cache (docs/check.md: the files are unchanged since\n")
	r.p("the first check, as for a check from a timer), the `KEEL_CACHE_DIR=off` row above is the first\n")
	r.p("check after a change, whose CUE evaluation and lvmconfig compete with `lvm fullreport` for the two\n")
	r.p("vCPUs.\n")
	r.p("Under TCG every process start is slow (`keel version` above), and a `keel check` process pays\n")
	r.p("for its own start before its first command and parses the report after the last.\n\n")
}

// sizeTable prints the head of a table with one column per size and
// returns the function that prints a row of it.
func (r *report) sizeTable(sizes []*guestSize) func(name string, f func(g *guestSize) string) {
	r.p("| figure |")
	for _, g := range sizes {
		r.p(" %s |", g.label())
	}
	r.p("\n|---|")
	for range sizes {
		r.p("---|")
	}
	r.p("\n")
	return func(name string, f func(g *guestSize) string) {
		r.p("| %s |", name)
		for _, g := range sizes {
			r.p(" %s |", f(g))
		}
		r.p("\n")
	}
}

// guestSides sets the sizes side by side and adds the check targets.
func (r *report) guestSides(measured []*guestSize) {
	r.p("## ~50 and 2,000 LVs side by side (test guest, the same boot)\n\n")
	r.p("The same rounds at each size of one host, one after the other in one boot. The VM disks beyond\n")
	r.p("the converged stack are not made by one `lvcreate` each (every one rewrites the whole VG metadata,\n")
	r.p("which grows with each LV): `e2e/scenarios/scale.sh` writes them into the VG's metadata text and\n")
	r.p("restores it with one `vgcfgrestore`; a thin pool's devices are created by create_thin messages LVM\n")
	r.p("sends on the pool's activation. As on a Proxmox host, where a VM's disks are active only while the\n")
	r.p("VM runs, 50 of the 2,000 are active. Sizes: ~50 (48 VM disks of 4 MiB on vdovg, the VG stacked on\n")
	r.p("the VDO LV); 2,000 (vdovg grown to 2,000 such disks); 2,000 thin (the VDO stack removed, a thin\n")
	r.p("pool of 1 GiB on nvme3 with 2,000 thin VM disks of 1 GiB virtual, beside bcache0; the desired\n")
	r.p("state then is `e2e/apply/desired/bcache.cue`).\n\n")
	row := r.sizeTable(measured)
	row("build of this size (scale.sh, from the one before)", func(g *guestSize) string {
		if g.build < 0 {
			return "—"
		}
		return sec(g.build)
	})
	row("`lvm fullreport` alone", func(g *guestSize) string { return summarize(g.probe[g.fullreportID]).spread(sec) })
	row("`lvm fullreport` alone, its output into a file in memory (tmpfs)", func(g *guestSize) string {
		return summarize(g.parts["frmem"]).spread(sec)
	})
	row("`lvs` alone", func(g *guestSize) string { return summarize(g.parts["lvs"]).spread(sec) })
	row("**`keel check`**", func(g *guestSize) string { return summarize(g.check).spread(sec) })
	row("`keel version` (process start)", func(g *guestSize) string { return summarize(g.parts["start"]).spread(sec) })
	row("keel's probe pass in-process (`keel snapshot -v`)", func(g *guestSize) string { return summarize(g.pass).spread(sec) })
	row("`keel status`", func(g *guestSize) string { return summarize(g.parts["status"]).spread(sec) })
	row("`keel check --node` of the host's snapshot", func(g *guestSize) string { return summarize(g.parts["check-node"]).spread(sec) })
	row("`keel check` / (`lvm fullreport` + `keel version`), per round", func(g *guestSize) string {
		w, _ := g.checkRatios()
		return summarize(w).spread(ratio)
	})
	row("`keel check` / (`lvm fullreport` into memory + `keel version`), per round", func(g *guestSize) string {
		return summarize(g.memRatios()).spread(ratio)
	})
	row("`keel check` / `lvm fullreport`, per round", func(g *guestSize) string {
		_, a := g.checkRatios()
		return summarize(a).spread(ratio)
	})
	row("in `keel check` (`KEEL_TIMING`): from main to `lvm fullreport`'s start", func(g *guestSize) string {
		b, _, _ := g.checkParts()
		return summarize(b).spread(sec)
	})
	row("in `keel check`: `lvm fullreport` inside it less alone, per round", func(g *guestSize) string {
		_, s, _ := g.checkParts()
		return summarize(s).spread(signedSec)
	})
	row("in `keel check`: from `lvm fullreport`'s end to the report written", func(g *guestSize) string {
		_, _, a := g.checkParts()
		return summarize(a).spread(sec)
	})
	r.p("\n")
	for _, g := range measured {
		if g.fullreportID == "" {
			r.missing("`keel check` ≤ `lvm fullreport` + `keel version` + 5%, "+g.label(), "≤ 1.05×", "no lvm fullreport in keel's command log")
			continue
		}
		w, a := g.checkRatios()
		ws, as := summarize(w), summarize(a)
		r.addTarget("`keel check` ≤ `lvm fullreport` + `keel version` + 5%, "+g.label(), "≤ 1.05× (median per round)",
			fmt.Sprintf("%s (check %s, fullreport %s, version %s)", ratio(ws.med), sec(summarize(g.check).med),
				sec(summarize(g.probe[g.fullreportID]).med), sec(summarize(g.parts["start"]).med)), ws.n > 0 && ws.med <= 1.05)
		if m := summarize(g.memRatios()); m.n > 0 {
			r.info("`keel check` / (`lvm fullreport` into memory + `keel version`), "+g.label()+
				" (keel's cost beyond receiving the report)", "—", ratio(m.med)+" (median per round)")
		}
		r.info("`keel check` / `lvm fullreport` alone, "+g.label()+" (the old ≤ 1.25× form, replaced by the row above)", "—",
			ratio(as.med)+" (median per round)")
	}
	r.p("Until 6bc698b keel asked for every LV field (`lv_all`), and on the 2,000-LV host on VDO the\n")
	r.p("first `lvm fullreport` often exited 5: the VDO pool held more data blocks than its LVs map, its\n")
	r.p("`vdo_saving_percent` field failed (\"percentage too large\") and LVM left the pool out of the\n")
	r.p("report, so keel read the pool's VG again. keel now names the fields it reads and that one is not\n")
	r.p("among them: a pass runs one report (the probe commands listed for the size show it).\n\n")

	r.p("The target compares a whole `keel check` process with what it cannot avoid: one `lvm fullreport`\n")
	r.p("and one process start, measured in the same rounds (under TCG a process start alone is a third\n")
	r.p("of a small host's fullreport, so the older form, check ≤ 1.25× fullreport, mostly measured the\n")
	r.p("emulated fork and exec; both are in the targets table).\n\n")

	r.p("The probe commands' runs alone discard their output (/dev/null), which no reader of a report\n")
	r.p("can: keel's `lvm fullreport` writes into a memfd, and every byte is copied into the page cache\n")
	r.p("by LVM's `write` and out of it by keel's read. Under TCG an emulated copy is far slower than on\n")
	r.p("hardware (in the guest `dd` of 3.2 MB in 4 KiB blocks took a median 49 ms longer into a tmpfs\n")
	r.p("file than into /dev/null, docs/benchmark-history.md). The row \"`lvm fullreport` alone, its\n")
	r.p("output into a file in memory\" runs the same command into a tmpfs file, and the ratio beside it\n")
	r.p("is keel's cost beyond what any reader pays to receive the report; it is reported, not a target.\n\n")
}

// daemonSection shows the daemon's idle window and reactions at each size.
func (r *report) daemonSection(daemons, bcaches []*guestSize) {
	r.p("## Daemon (`keel run`) on a converged guest\n\n")
	if len(daemons) == 0 {
		why := r.notRun("guest")
		r.p("%s.\n\n", why)
		for _, t := range [][2]string{{"daemon idle: mutating commands and actions", "0"}, {"daemon idle: CPU with its children", "< 0.2% of a core"},
			{"daemon idle: peak RSS", "< 64 MiB"}, {"reaction to a desired-state change (guest)", "< 1 s"},
			{"reaction to a bcache registration (guest)", "< 1 s"}} {
			r.missing(t[0], t[1], why)
		}
		return
	}
	r.p("After each size's check rounds: `keel run -c /etc/keel --textfile …` (defaults `--resync 1h`, `--poll 30s`)\n")
	r.p("with every command it runs going through a logging shim on its PATH. After its first pass and 2 s\n")
	r.p("of settling, an idle window of **%s s** (BENCH_DAEMON_SECONDS): CPU from /proc/PID/stat,\n", r.meta["daemon_seconds"])
	r.p("keel's own (utime+stime: every thread of the daemon) and its children's (cutime+cstime: the probe\n")
	r.p("commands it ran and waited for, and the logging shim's shells); the CPU target counts both. Peak\n")
	r.p("RSS is the kernel's VmHWM (the whole life of the process, first pass included). Under TCG a CPU\n")
	r.p("second is an emulated one, so the CPU figures are upper bounds. The hourly safety resync falls\n")
	r.p("outside a window shorter than an hour: its share of idle CPU is one pass's CPU (the why=start rows\n")
	r.p("below) over 3,600 s.\n\n")
	row := r.sizeTable(daemons)
	pct := func(s, win float64) string { return fmt.Sprintf("%.3f s = %.4f%% of a core", s, 100*s/win) }
	row("window", func(g *guestSize) string { return fmt.Sprintf("%.1f s", g.d["window"]) })
	row("probe passes in the window", func(g *guestSize) string { return fmt.Sprintf("%.0f", g.d["passes"]) })
	row("commands run (all)", func(g *guestSize) string { return fmt.Sprintf("%.0f", g.d["commands"]) })
	row("commands through the shim over the daemon's life (shows the shim works)", func(g *guestSize) string { return fmt.Sprintf("%.0f", g.d["commands-total"]) })
	row("mutating commands / executor actions", func(g *guestSize) string { return fmt.Sprintf("%.0f / %.0f", g.d["mutating"], g.d["actions"]) })
	row("CPU, keel's own", func(g *guestSize) string { return pct(g.d["cpu"], g.d["window"]) })
	row("CPU, the commands keel ran (children, shim included)", func(g *guestSize) string { return pct(g.d["cpu-children"], g.d["window"]) })
	row("**CPU, both**", func(g *guestSize) string { return pct(g.d["cpu"]+g.d["cpu-children"], g.d["window"]) })
	row("peak RSS (VmHWM) / RSS at the end", func(g *guestSize) string {
		return fmt.Sprintf("%.1f MiB / %.1f MiB", g.d["hwm-kib"]/1024, g.d["rss-kib"]/1024)
	})
	row("reaction to a desired-state change", func(g *guestSize) string {
		return summarize(g.reactConfig).spread(msec) + fmt.Sprintf(", %d timeouts", g.timeouts["react-config"])
	})
	r.p("\n")
	// How long the daemon's own passes took, by cause, from its logs.
	r.p("The daemon's passes by cause (its log: duration; CPU by getrusage, keel's own / its children's):\n\n")
	r.p("| size | why | duration | CPU own / children |\n|---|---|---|---|\n")
	passRE := regexp.MustCompile(`pass done: why=("[^"]*"|\S+) took=(\S+)(?: status="[^"]*" cpu_self=(\S+) cpu_children=(\S+))?`)
	all := append(append([]*guestSize(nil), daemons...), bcaches...)
	seen := map[string]bool{}
	for _, g := range all {
		for _, f := range []string{"share/out/daemon-" + g.tag + ".log", "share/out/daemon2-" + g.tag + ".log"} {
			if seen[f] {
				continue
			}
			seen[f] = true
			took, cpuSelf, cpuKids := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
			var whys []string
			for _, m := range passRE.FindAllStringSubmatch(r.read(f), -1) {
				dd, err := time.ParseDuration(m[2])
				if err != nil {
					continue
				}
				why := strings.Trim(m[1], `"`)
				if took[why] == nil {
					whys = append(whys, why)
				}
				took[why] = append(took[why], dd.Seconds())
				if cs, err := time.ParseDuration(m[3]); err == nil {
					cpuSelf[why] = append(cpuSelf[why], cs.Seconds())
				}
				if ck, err := time.ParseDuration(m[4]); err == nil {
					cpuKids[why] = append(cpuKids[why], ck.Seconds())
				}
			}
			for _, why := range whys {
				r.p("| %s | %s | %s | %s / %s |\n", g.label(), why, summarize(took[why]).spread(sec),
					summarize(cpuSelf[why]).spread(sec), summarize(cpuKids[why]).spread(sec))
			}
		}
	}
	r.p("\n")
	for _, g := range daemons {
		win := g.d["window"]
		both := (g.d["cpu"] + g.d["cpu-children"]) / win
		if g.d["commands-total"] == 0 {
			r.missing("daemon idle: mutating commands and actions, "+g.label(), "0", "not measured: no command went through the logging shim")
		} else {
			r.addTarget("daemon idle: mutating commands and actions, "+g.label(), "0",
				fmt.Sprintf("%.0f commands, %.0f actions in %.0f s", g.d["mutating"], g.d["actions"], win), g.d["mutating"] == 0 && g.d["actions"] == 0)
		}
		cpu := fmt.Sprintf("%.4f%% (own %.3f s + children %.3f s in %.0f s)", 100*both, g.d["cpu"], g.d["cpu-children"], win)
		if win < 120 {
			// Idle costs are the metadata and pool polls (every 30 s by
			// default): a shorter window holds too few of them.
			r.missing("daemon idle: CPU with its children, "+g.label(), "< 0.2% of a core",
				"not measured: a "+fmt.Sprintf("%.0f s", win)+" window holds fewer than four 30 s polls; it read "+cpu)
		} else {
			r.addTarget("daemon idle: CPU with its children, "+g.label(), "< 0.2% of a core", cpu, both < 0.002)
		}
		r.addTarget("daemon idle: peak RSS, "+g.label(), "< 64 MiB", fmt.Sprintf("%.1f MiB", g.d["hwm-kib"]/1024), g.d["hwm-kib"] > 0 && g.d["hwm-kib"] < 64*1024)
	}

	r.p("Reaction, from the event to the value read back in sysfs (polled every 20 ms):\n\n")
	r.p("- desired-state change: `writebackPercent` flipped between 40 and 30 by an atomic rename into\n")
	r.p("  /etc/keel; the watch waits for 100 ms of quiet and compares the content, the daemon 20 ms more,\n")
	r.p("  then loads the desired state; the change touches a bcache tunable only, so the bcache fast path\n")
	r.p("  (sysfs-only probe and plan) writes it before the full pass. Each round starts with the daemon\n")
	r.p("  idle: after the previous value read back, the script waits for the pass that change started;\n")
	r.p("  a change made while a pass runs would wait for that pass (its duration is in the table above);\n")
	r.p("- bcache registration: bcache0 stopped and its cache set unregistered (after the VDO stack was\n")
	r.p("  removed and the desired state cut to the bcache part; once with no other LVs, once beside the\n")
	r.p("  2,000 thin VM disks), both devices registered again (by the script, or first by bcache-tools'\n")
	r.p("  udev rule when the released disks change); timed from the 20 ms poll that sees the new bcache0\n")
	r.p("  in sysfs to `sequential_cutoff` reading `0.0k` (the kernel resets it to 4.0M): keel's udev rule\n")
	r.p("  or the daemon's bcache fast path (sysfs-only probe, bcache-only plan), whichever writes first.\n\n")
	r.p("A change that touches more than bcache tunables is served by the full pass alone, whose probe\n")
	r.p("starts while the desired state loads: under TCG its latency is bound by the probe (the pass\n")
	r.p("durations above), not by the watch.\n\n")
	r.p("| event | size | latency | timeouts (30 s) |\n|---|---|---|---:|\n")
	react := func(name string, g *guestSize, v []float64, to int) {
		s := summarize(v)
		r.p("| %s | %s | %s | %d |\n", name, g.label(), s.spread(msec), to)
		if s.n == 0 {
			r.addTarget("reaction to a "+name+", "+g.label(), "< 1 s", fmt.Sprintf("no reaction within 30 s (%d timeouts)", to), false)
			return
		}
		r.addTarget("reaction to a "+name+", "+g.label(), "< 1 s", s.spread(msec)+fmt.Sprintf(", %d timeouts", to), s.med < 1000 && to == 0)
	}
	for _, g := range daemons {
		react("desired-state change", g, g.reactConfig, g.timeouts["react-config"])
	}
	for _, g := range bcaches {
		react("bcache registration", g, g.reactBcache, g.timeouts["react-bcache"])
	}
	r.p("\n")
}
