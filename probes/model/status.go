package model

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/keel-storage/keel/lvm/units"
)

// WriteStatus writes a human-readable tree of the host's storage stack:
// each VG with its PVs (fast or slow, and what they sit on), its VDO and
// thin pools with fill levels and where the VDO index and journal sit, then
// bcache devices, key LVM settings and Proxmox storages. The order is
// deterministic.
func WriteStatus(w io.Writer, h *Host) {
	cpus := fmt.Sprintf("%d CPUs", h.CPUs)
	if h.CPUs == 1 {
		cpus = "1 CPU"
	}
	fmt.Fprintf(w, "host %s: kernel %s, %s, memory %s total, %s available\n",
		h.Hostname, h.Kernel, cpus, units.FormatSize(h.Memory.TotalBytes), units.FormatSize(h.Memory.AvailableBytes))
	lvByDM := map[string]*LV{}
	for _, lv := range h.LVs {
		lvByDM[lv.DMName] = lv
	}
	for _, name := range slices.Sorted(maps.Keys(h.VGs)) {
		vg := h.VGs[name]
		fmt.Fprintf(w, "\nvg %s: %s, %s free, extent %s\n", vg.Name, units.FormatSize(vg.Size), units.FormatSize(vg.Free), units.FormatSize(vg.ExtentSize))
		if vg.Lockd() {
			fmt.Fprintf(w, "  lock %s (lvmlockd, lock args %q), %s\n", vg.LockType, vg.LockArgs, lockspace(h.Lvmlockd, name))
		}
		for _, pn := range vg.PVs {
			writePV(w, "  ", h, h.PVs[pn], lvByDM)
		}
		shown := map[string]bool{}
		for _, pn := range slices.Sorted(maps.Keys(h.VDOPools)) {
			if p := h.VDOPools[pn]; p.VG == name {
				writeVDO(w, h, p, shown)
			}
		}
		for _, tn := range slices.Sorted(maps.Keys(h.ThinPools)) {
			if tp := h.ThinPools[tn]; tp.VG == name {
				writeThin(w, h, tp, shown)
			}
		}
		for _, ln := range vg.LVs {
			lv := h.LVs[ln]
			if shown[ln] || lv.Hidden || lv.Name == "lvol0_pmspare" {
				continue
			}
			fmt.Fprintf(w, "  lv %s: %s %s, %s\n", lv.FullName, lv.SegType, units.FormatSize(lv.Size), activity(lv))
		}
	}
	var orphans []string
	for _, pn := range slices.Sorted(maps.Keys(h.PVs)) {
		if h.PVs[pn].VG == "" {
			orphans = append(orphans, pn)
		}
	}
	if len(orphans) > 0 {
		fmt.Fprintln(w, "\npvs without a vg:")
		for _, pn := range orphans {
			writePV(w, "  ", h, h.PVs[pn], lvByDM)
		}
	}
	if len(h.Bcache) > 0 || len(h.CacheSets) > 0 {
		fmt.Fprintln(w, "\nbcache:")
		for _, u := range slices.Sorted(maps.Keys(h.Bcache)) {
			b := h.Bcache[u]
			fmt.Fprintf(w, "  %s (%s) on %s: %s, state %s, dirty %s, sequential_cutoff %s, writeback_percent %d\n",
				b.Device, b.UUID, b.Backing, b.CacheMode, b.State, units.FormatSize(b.DirtyData), units.FormatSize(b.SequentialCutoff), b.WritebackPercent)
			if b.CacheSet != "" {
				fmt.Fprintf(w, "    cache set %s\n", b.CacheSet)
			}
			writeErrors(w, "    ", b.Errors)
		}
		for _, u := range slices.Sorted(maps.Keys(h.CacheSets)) {
			c := h.CacheSets[u]
			fmt.Fprintf(w, "  cache set %s on %s: congested read %dus write %dus, journal_delay_ms %d\n",
				c.UUID, strings.Join(c.CacheDevices, ","), c.CongestedReadThresholdUS, c.CongestedWriteThresholdUS, c.JournalDelayMS)
			writeErrors(w, "    ", c.Errors)
		}
	}
	cfg := h.LVMConfig.Values
	fmt.Fprintf(w, "\nlvm config: scan_lvs=%s global_filter=%s use_devicesfile=%s\n",
		orUnknown(cfg["devices/scan_lvs"]), orUnknown(cfg["devices/global_filter"]), orUnknown(cfg["devices/use_devicesfile"]))
	writeErrors(w, "  ", h.LVMConfig.Errors)
	if h.Proxmox != nil {
		fmt.Fprintln(w, "\nproxmox storages:")
		for _, s := range h.Proxmox.Storages {
			if s.Type == "lvm" || s.Type == "lvmthin" {
				fmt.Fprintf(w, "  %s %s: vg %s, saferemove %v", s.Type, s.ID, s.VG, s.Saferemove)
				for _, k := range slices.Sorted(maps.Keys(s.Options)) {
					if strings.HasPrefix(k, "saferemove_") {
						fmt.Fprintf(w, ", %s %s", k, s.Options[k])
					}
				}
				fmt.Fprintln(w)
			}
		}
		writeErrors(w, "  ", h.Proxmox.Errors)
	}
	if len(h.Errors) > 0 {
		fmt.Fprintln(w, "\nprobe errors:")
		writeErrors(w, "  ", h.Errors)
	}
}

func writePV(w io.Writer, indent string, h *Host, pv *PV, lvByDM map[string]*LV) {
	if pv == nil {
		return
	}
	speed := "slow"
	switch pv.Rotational {
	case 0:
		speed = "fast"
	case -1:
		speed = "speed unknown"
	}
	on := pv.Transport
	if q := h.Queues[pv.Device]; q != nil && q.DMName != "" {
		if lv := lvByDM[q.DMName]; lv != nil {
			on = "on lv " + lv.FullName
		} else {
			on = "on dm " + q.DMName
		}
	}
	for _, b := range h.Bcache {
		if b.Device == pv.Device {
			on = fmt.Sprintf("on bcache %s (backing %s, %s)", b.UUID, b.Backing, b.CacheMode)
		}
	}
	id := ""
	if len(pv.ByID) > 0 {
		id = " " + pv.ByID[0]
		for _, b := range pv.ByID {
			if !strings.HasPrefix(b, "lvm-pv-uuid-") {
				id = " " + b
				break
			}
		}
	}
	fmt.Fprintf(w, "%spv %s: %s, %s free, %s %s%s\n", indent, pv.Name, units.FormatSize(pv.Size), units.FormatSize(pv.Free), speed, on, id)
	writeErrors(w, indent+"  ", pv.Errors)
}

func writeVDO(w io.Writer, h *Host, p *VDOPool, shown map[string]bool) {
	shown[p.LV], shown[p.DataLV] = true, true
	for _, v := range p.VDOLVs {
		shown[v] = true
		if lv := h.LVs[v]; lv != nil {
			fmt.Fprintf(w, "  vdo %s: %s virtual, %s\n", v, units.FormatSize(lv.Size), activity(lv))
		}
	}
	size := uint64(0)
	if lv := h.LVs[p.LV]; lv != nil {
		size = lv.Size
	}
	fmt.Fprintf(w, "    vdo pool %s: %s", p.LV, units.FormatSize(size))
	if p.Status != nil {
		fmt.Fprintf(w, ", %s, index %s, used %.1f%% (%d of %d blocks)", p.Status.Mode, p.Status.IndexState,
			p.Status.UsedPercent(), p.Status.UsedBlocks, p.Status.TotalBlocks)
	} else {
		fmt.Fprint(w, ", inactive")
	}
	if s := p.Stats.SavingPercent(); p.Stats != nil && s >= 0 {
		fmt.Fprintf(w, ", saving %.0f%%", s)
	}
	fmt.Fprintln(w)
	if t := p.Table; t != nil {
		fmt.Fprintf(w, "      compression %s, deduplication %s, maxDiscard %d, threads ack %d bio %d cpu %d hash %d logical %d physical %d\n",
			onOff(t.Compression), onOff(t.Deduplication), t.MaxDiscard, t.Ack, t.Bio, t.CPU, t.Hash, t.Logical, t.Physical)
	}
	if st := p.Stats; st != nil {
		fmt.Fprintf(w, "      dedupe advice valid %d stale %d timeouts %d; errors invalid-advice %d no-space %d read-only %d\n",
			st.DedupeAdviceValid, st.DedupeAdviceStale, st.DedupeAdviceTimeouts, st.InvalidAdvicePBN, st.NoSpaceErrors, st.ReadOnlyErrors)
	}
	if data := h.LVs[p.DataLV]; data != nil {
		fmt.Fprintf(w, "      data %s:", p.DataLV)
		for _, seg := range data.Segments {
			for _, r := range seg.PVRanges {
				fmt.Fprintf(w, " %s", placement(h, r))
			}
		}
		fmt.Fprintln(w)
	}
	src := "on-disk super block"
	if p.OnDisk == nil {
		src = "computed"
	}
	for _, r := range p.Regions {
		var where []string
		for _, on := range r.On {
			where = append(where, placement(h, on))
		}
		fmt.Fprintf(w, "      %-16s blocks %d-%d (%s): %s\n", r.Name, r.Blocks.First, r.Blocks.Last, src, strings.Join(where, " "))
	}
	writeErrors(w, "      ", p.Errors)
}

func writeThin(w io.Writer, h *Host, tp *ThinPool, shown map[string]bool) {
	shown[tp.LV] = true
	if lv := h.LVs[tp.LV]; lv != nil {
		shown[lv.DataLV], shown[lv.MetadataLV] = true, true
	}
	fmt.Fprintf(w, "  thin pool %s: %s, chunk %s, zeroing %s, discards %s, metadata %s, data %s, metadata %s",
		tp.LV, units.FormatSize(tp.DataSize), units.FormatSize(tp.ChunkSize), onOff(tp.Zero), tp.Discards, units.FormatSize(tp.MetadataSize),
		pct(tp.DataPercent), pct(tp.MetadataPercent))
	if st := tp.Status; st != nil {
		switch {
		case st.Failed:
			fmt.Fprint(w, ", FAILED")
		case st.OutOfDataSpace:
			fmt.Fprint(w, ", OUT OF DATA SPACE")
		case st.ReadOnly:
			fmt.Fprint(w, ", READ-ONLY")
		default:
			fmt.Fprint(w, ", rw")
		}
		if st.NeedsCheck {
			fmt.Fprint(w, ", NEEDS CHECK")
		}
	} else {
		fmt.Fprint(w, ", inactive")
	}
	fmt.Fprintln(w)
	for _, t := range tp.ThinLVs {
		shown[t] = true
		if lv := h.LVs[t]; lv != nil {
			fmt.Fprintf(w, "    thin %s: %s, %s used, %s\n", t, units.FormatSize(lv.Size), pct(lv.DataPercent), activity(lv))
		}
	}
	writeErrors(w, "    ", tp.Errors)
}

func placement(h *Host, r PVRange) string {
	speed := "?"
	if pv := h.PVs[r.PV]; pv != nil {
		speed = map[int]string{0: "fast", 1: "slow", -1: "?"}[pv.Rotational]
	}
	return fmt.Sprintf("%s[PE %d-%d %s]", r.PV, r.FirstPE, r.LastPE, speed)
}

func activity(lv *LV) string {
	switch {
	case lv.Open:
		return "active, open"
	case lv.Active:
		return "active"
	}
	return "inactive"
}

func writeErrors(w io.Writer, indent string, errs []string) {
	for _, e := range errs {
		fmt.Fprintf(w, "%s! %s\n", indent, e)
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

func pct(v float64) string {
	if v < 0 {
		return "?"
	}
	return fmt.Sprintf("%.1f%%", v)
}

// lockspace says whether lvmlockd has started vg's lockspace on this host.
func lockspace(l *Lvmlockd, vg string) string {
	switch {
	case l == nil:
		return "lockspace unknown (lvmlockd not asked)"
	case l.Error != "":
		return "lockspace unknown: " + l.Error
	case !l.Running:
		return "lockspace not started: lvmlockd is not running"
	case l.LockStarted(vg):
		return "lockspace started"
	}
	return "lockspace not started"
}
