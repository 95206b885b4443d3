package main

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// bootCostLine is one "bootcost" line TestBootCost prints (e2e/boot/bootcost.sh):
// the size, the mode, the activation unit's start (µs since the kernel
// started) and its start to READY (ms), the
// pve-guests stand-in's activation (µs since the kernel started), the
// anchor (µs since the kernel started: lvm2's first activation unit's
// start, or the activation unit's if earlier; lines from before it was
// recorded have none), the host's one-minute load before the boot.
var bootCostLine = regexp.MustCompile(`^bootcost lvs=(\d+) mode=(keel|lvm) start_us=(\d+) ready_us=\d+ ready_ms=(\d+) guests_us=(\d+) (?:anchor_us=(\d+) )?.*hostload=([0-9.]+)`)

// bootCostSample is the boots of one size and mode.
type bootCostSample struct {
	start, ready, guests, load []float64 // s, ms, s, load average
	// fromAnchor is the guests' activation after the anchor, s, for the
	// boots whose line has one.
	fromAnchor []float64
}

// bootCostMargin is the bound on keel's boot cost: 5 % over the bare
// LVM activation, as a median.
const bootCostMargin = 0.05

// bootCost reports TestBootCost: keel-activate against the bare vgchange
// per VG over alternating reboots of one guest, and the targets on both.
func (r *report) bootCost() {
	text := r.read("bootcost.txt")
	got := map[string]map[string]*bootCostSample{}
	for _, l := range strings.Split(text, "\n") {
		m := bootCostLine.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		if got[m[1]] == nil {
			got[m[1]] = map[string]*bootCostSample{"keel": {}, "lvm": {}}
		}
		s := got[m[1]][m[2]]
		start, _ := strconv.ParseFloat(m[3], 64)
		ready, _ := strconv.ParseFloat(m[4], 64)
		guests, _ := strconv.ParseFloat(m[5], 64)
		load, _ := strconv.ParseFloat(m[7], 64)
		if m[6] != "" {
			anchor, _ := strconv.ParseFloat(m[6], 64)
			s.fromAnchor = append(s.fromAnchor, (guests-anchor)/1e6)
		}
		s.start = append(s.start, start/1e6)
		s.ready = append(s.ready, ready)
		s.guests = append(s.guests, guests/1e6)
		s.load = append(s.load, load)
	}
	r.p("### Boot cost: keel-activate against the bare LVM activation\n\n")
	if len(got) == 0 {
		why := r.notRun("boot")
		r.p("`BENCH_ONLY=boot make bench` measures it (`e2e/boot` TestBootCost, docs/boot.md): %s.\n\n", why)
		for _, n := range []string{"~50", "2,000"} {
			r.missing("keel-activate start to READY, "+n+" LVs", "≤ 1.05 × bare `vgchange -aay` per VG (median)", why)
			r.missing("pve-guests reached, "+n+" LVs", "≤ bare + 5 % of the bare activation (median)", why)
			r.missing("pve-guests reached after lvm2's first activation unit, "+n+" LVs", "≤ bare + 5 % of the bare activation (median)", why)
		}
		return
	}
	r.p("`BENCH_ONLY=boot make bench` runs it (`e2e/boot` TestBootCost with `KEEL_BENCH_BOOTCOST=1`; reboots\n")
	r.p("per size `BENCH_BOOTCOST_50`, `BENCH_BOOTCOST_2000`, default 12 and 12, six a mode): one systemd guest with the\n")
	r.p("stack of `examples/vdo-on-bcache.cue` and vdovg's VM disks, rebooted with its disks kept, the mode\n")
	r.p("alternating boot by boot so the shared host's load falls on both: **keel** = the package's\n")
	r.p("keel-activate.service and keel.service; **lvm** = both disabled, `e2e/boot/lvm-bare.service` instead\n")
	r.p("(wait for the PVs, then `vgchange -aay vdosplit`, `vgchange -aay vdovg`). lvm2's own udev\n")
	r.p("autoactivation and keel's udev rules are on in both. From systemd's monotonic timestamps: the unit's\n")
	r.p("main process start (since the kernel started) and its start to READY (keel, Type=notify) or its end (lvm, oneshot), and the pve-guests\n")
	r.p("stand-in's activation, both since the kernel started, and the stand-in's activation after lvm2's first\n")
	r.p("activation unit started (udev's `lvm-activate-<vg>.service`; the activation unit's own start if that came\n")
	r.p("first): nothing of keel's runs before that moment in either mode, so the time after it is what keel can\n")
	r.p("change, without the spread of the kernel, the initrd and udev's coldplug before it. At 2,000 LVs, 50\n")
	r.p("are autoactivated (running VMs) and 1,950 have autoactivation off, as Proxmox VE creates guest disks.\n\n")
	r.p("| LVs | mode | unit started | start to READY | pve-guests reached | pve-guests after lvm2's first unit | host load (1 min) |\n|---|---|---|---|---|---|---|\n")
	sizes := make([]string, 0, len(got))
	for k := range got {
		sizes = append(sizes, k)
	}
	sort.Slice(sizes, func(i, j int) bool { a, _ := strconv.Atoi(sizes[i]); b, _ := strconv.Atoi(sizes[j]); return a < b })
	for _, size := range sizes {
		for _, mode := range []string{"keel", "lvm"} {
			s := got[size][mode]
			r.p("| %s | %s | %s | %s | %s | %s | %s |\n", size, mode, summarize(s.start).spread(sec), summarize(s.ready).spread(msec), summarize(s.guests).spread(sec),
				summarize(s.fromAnchor).spread(sec), summarize(s.load).spread(func(v float64) string { return fmt.Sprintf("%.1f", v) }))
		}
	}
	r.p("\n")
	for _, size := range sizes {
		k, l := got[size]["keel"], got[size]["lvm"]
		name := size
		if size == "50" {
			name = "~50"
		}
		if len(k.ready) == 0 || len(l.ready) == 0 {
			r.missing("keel-activate start to READY, "+name+" LVs", "≤ 1.05 × bare (median)", "not measured: a mode had no boot")
			continue
		}
		kr, lr := summarize(k.ready).med, summarize(l.ready).med
		r.addTarget("keel-activate start to READY, "+name+" LVs", "≤ 1.05 × bare `vgchange -aay` per VG (median)",
			fmt.Sprintf("%s vs %s: %s", msec(kr), msec(lr), ratio(kr/lr)), kr <= (1+bootCostMargin)*lr)
		kg, lg := summarize(k.guests).med, summarize(l.guests).med
		// The guests' start may come later by at most 5 % of the bare
		// activation: what keel adds to the boot, not to the whole boot.
		r.addTarget("pve-guests reached, "+name+" LVs", "≤ bare + 5 % of the bare activation (median)",
			fmt.Sprintf("%s vs %s (%s; bound %s)", sec(kg), sec(lg), signedSec(kg-lg), signedSec(bootCostMargin*lr/1e3)),
			kg-lg <= bootCostMargin*lr/1e3)
		name = "pve-guests reached after lvm2's first activation unit, " + name + " LVs"
		if len(k.fromAnchor) == 0 || len(l.fromAnchor) == 0 {
			r.missing(name, "≤ bare + 5 % of the bare activation (median)", "not measured: no anchor in a mode's lines")
			continue
		}
		ka, la := summarize(k.fromAnchor).med, summarize(l.fromAnchor).med
		r.addTarget(name, "≤ bare + 5 % of the bare activation (median)",
			fmt.Sprintf("%s vs %s (%s; bound %s)", sec(ka), sec(la), signedSec(ka-la), signedSec(bootCostMargin*lr/1e3)),
			ka-la <= bootCostMargin*lr/1e3)
	}
}
