package daemon

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"time"

	"github.com/keel-storage/keel/cmd/keel/internal/uevent"
	"github.com/keel-storage/keel/probes/model"
)

// The change signal: what tells the daemon that LVM or device-mapper state
// changed behind its back, so that a full pass (lvm fullreport, whose cost
// grows with the LVs) runs on a real change and otherwise only every
// Resync. Two signals, each cheap (docs/daemon.md, "The change signal"):
//
//   - kernel block uevents: every device-mapper create, remove and resume
//     emits one on the dm device (linux drivers/md/dm-ioctl.c and dm.c,
//     dm_kobject_uevent), so every activation change is heard; and udev's
//     watch on disks (60-block.rules, OPTIONS+="watch") makes the kernel emit
//     a change uevent when a writer closes a disk, which covers pvcreate on
//     a fresh disk. They are coalesced (blockEvents): while they keep coming,
//     a pass, then EventGap of sleep, then the next; and always one after the last.
//   - the LVM metadata stamp (probes.MetadataStamp) of every PV the last
//     pass saw, polled every Poll: each LVM commit rewrites the metadata
//     area headers of every PV of the VG, so changes that touch no
//     device-mapper device (an inactive LV created, extended, tagged or
//     removed, vgextend) are seen within one poll.

// eventQueue carries the reason of a pending coalesced trigger; its one
// slot holds the first reason until blockEvents takes it.
type eventQueue chan string

func (q eventQueue) offer(why string) {
	select {
	case q <- why:
	default: // one is pending already; the pass it starts will see this too
	}
}

// blockEvents turns the reasons offered on q into passes: fire starts one
// and returns a channel closed when it has ended. The first reason fires at
// once; a later one fires gap after the previous pass ended. A reason
// offered at any time is followed by a pass that starts after it (what came
// during the wait is folded into the next pass), so the last of a burst
// always gets its pass; a flood of events lasting T costs at most T/(P+gap)
// + 2 passes of P each, and keel sleeps at least gap between them.
func blockEvents(ctx context.Context, q eventQueue, gap time.Duration, fire func(why string) <-chan struct{}) {
	var last time.Time
	for {
		var why string
		select {
		case <-ctx.Done():
			return
		case why = <-q:
		}
		if wait := gap - time.Since(last); !last.IsZero() && wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		select {
		case <-q:
		default:
		}
		done := fire(why)
		select {
		case <-ctx.Done():
			return
		case <-done:
		}
		last = time.Now()
	}
}

// blockEvent reports whether e is a block device appearing, going or
// changing (a dm device created, removed, resumed or renamed; a disk
// written and closed, seen through udev's watch).
func blockEvent(e uevent.Event) bool {
	if e.Subsystem != "block" {
		return false
	}
	switch e.Action {
	case "add", "remove", "change":
		return true
	}
	return false
}

// bcacheRemoveDelay holds back the pass for a bcache device's removal: a
// stop and re-registration removes and adds it within a second or two, and
// the add's fast path (tunables at once) must not wait behind a full pass
// the remove would have started. A device gone for good is seen this much
// later.
const bcacheRemoveDelay = 10 * time.Second

// onUevent routes one kernel uevent: a bcache registration to the fast
// path, a bcache device's removal to the coalescer after
// bcacheRemoveDelay (later runs a function after it), any other block
// device event to the coalescer at once.
func (d *Daemon) onUevent(e uevent.Event, send func(trigger) bool, q eventQueue, later func(func())) {
	why := "block device " + e.Action + " " + e.Env["DEVNAME"]
	switch {
	case e.BcacheRegistered():
		d.Log.Info("bcache device registered", "devpath", e.DevPath, "cached_uuid", e.Env["CACHED_UUID"])
		send(trigger{why: "bcache device " + e.Action, fast: true})
	case blockEvent(e) && e.Action == "remove" && strings.HasPrefix(e.Env["DEVNAME"], "bcache"):
		later(func() { q.offer(why) })
	case blockEvent(e):
		d.Log.Trace("block uevent", "action", e.Action, "devpath", e.DevPath)
		q.offer(why)
	}
}

// StampFunc reads the LVM metadata stamp of the PV at dev
// (probes.MetadataStamp through the daemon's file root).
type StampFunc func(dev string) (string, error)

// pollMetadata reads the stamps of the PVs the last pass saw at every tick
// and sends a trigger when any differs from the tick before, or is new
// (neither stamped at an earlier tick nor in a baseline offerBaseline
// verified). An
// unreadable stamp (the device gone, EIO) is a stamp too, its error: it
// passes once, and again only when the error changes, never in a loop.
//
// At the same ticks it reads PoolKey when set: the kernel's pools fill and
// change mode with no uevent and no LVM commit, so a changed key (a whole
// percent more data, a pool turned read-only) sends a trigger too. The
// first reading is the baseline: the start pass has just read the pools.
func (d *Daemon) pollMetadata(ctx context.Context, tick <-chan time.Time, stamp StampFunc, send func(trigger)) {
	prev := map[string]string{}
	var poolKey string
	first := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		if stamp != nil {
			for dev, s := range d.takeBaseline() {
				if _, ok := prev[dev]; !ok {
					prev[dev] = s
				}
			}
			devs, _ := d.pvDevs.Load().([]string)
			var changed []string
			prev, changed = d.restamp(prev, devs, stamp)
			if len(changed) > 0 {
				d.Log.Info("lvm metadata changed", "pvs", strings.Join(changed, ","))
				send(trigger{why: "lvm metadata changed"})
			}
		}
		if d.PoolKey != nil {
			k, err := d.PoolKey(ctx)
			if err != nil {
				k = "error: " + err.Error() // passes once, like an unreadable stamp
			}
			if !first && k != poolKey {
				d.Log.Info("pool status changed", "err", err)
				send(trigger{why: "pool status changed"})
			}
			poolKey, first = k, false
		}
	}
}

// offerBaseline gives pollMetadata, after the first pass, the stamps of the PVs of h, the
// host a pass has just judged, when it can show that they describe what
// the pass read: it reads every stamp after the pass, then every VG's
// seqno (d.Seqnos), and keeps the stamps only when each VG's seqno is the
// one the pass's report gave and no VG is new. LVM adds one to a VG's
// seqno each time it writes the VG's metadata (vg_write in lvm2's
// lib/metadata/metadata.c), so then no commit came between the report and
// the stamps. A PV whose stamp is unreadable or shows no label is left
// out (it counts as changed at the next tick, as before). Without this,
// the poll's first tick after the start sees every PV as new and starts a
// full pass with nothing changed, in every daemon start, at a cost that
// grows with the number of LVs (docs/benchmark-history.md has the figures).
func (d *Daemon) offerBaseline(ctx context.Context, h *model.Host) {
	// Once, after the first pass that probed: later, the poll has stamped
	// every PV it knows, and only PVs new to it count as changed.
	if d.Stamp == nil || d.Seqnos == nil || h == nil || !d.baselined.CompareAndSwap(false, true) {
		return
	}
	stamps := make(map[string]string, len(h.PVs))
	for name := range h.PVs {
		s, err := d.Stamp(name)
		if err != nil || s == "no label" {
			continue
		}
		stamps[name] = s
	}
	now, err := d.Seqnos(ctx)
	if err != nil {
		d.Log.Debug("no poll baseline: vg seqnos unreadable", "err", err)
		return
	}
	for name, vg := range h.VGs {
		if n, ok := now[name]; !ok || n != vg.Seqno {
			d.Log.Debug("no poll baseline: a VG changed since the pass read it", "vg", name, "seqno", vg.Seqno, "now", n)
			return
		}
	}
	for name := range now {
		if _, ok := h.VGs[name]; !ok {
			d.Log.Debug("no poll baseline: a VG appeared since the pass read LVM", "vg", name)
			return
		}
	}
	d.baselineMu.Lock()
	d.baseline = stamps
	d.baselineMu.Unlock()
}

// takeBaseline returns the stamps offerBaseline verified, once.
func (d *Daemon) takeBaseline() map[string]string {
	d.baselineMu.Lock()
	defer d.baselineMu.Unlock()
	b := d.baseline
	d.baseline = nil
	return b
}

// restamp reads the stamps of devs and returns them with the devices whose
// stamp differs from prev or is not in it.
func (d *Daemon) restamp(prev map[string]string, devs []string, stamp StampFunc) (map[string]string, []string) {
	cur := make(map[string]string, len(devs))
	var changed []string
	for _, dev := range devs {
		s, err := stamp(dev)
		if err != nil {
			s = "error: " + err.Error()
		}
		cur[dev] = s
		if old, ok := prev[dev]; !ok || old != s {
			changed = append(changed, dev)
			if err != nil {
				d.Log.Warn("lvm metadata stamp unreadable: one pass, then again only when the error changes", "pv", dev, "err", err)
			}
		}
	}
	return cur, changed
}

// notePVs keeps the PV devices of a probed host for pollMetadata.
func (d *Daemon) notePVs(h *model.Host) {
	if h == nil {
		return
	}
	devs := make([]string, 0, len(h.PVs))
	for name := range h.PVs {
		devs = append(devs, name)
	}
	sort.Strings(devs)
	d.pvDevs.Store(devs)
}

// lvmDigest summarises what a pass saw of LVM: the PVs and their VG, the
// VGs' sizes and PVs, the PVs' free space, and each LV's size, attributes
// and tags, hashed. It
// goes on the `pass done` line, so a log shows whether a pass saw a change.
func lvmDigest(h *model.Host) string {
	if h == nil {
		return ""
	}
	var lines []string
	for name, pv := range h.PVs {
		lines = append(lines, fmt.Sprintf("pv %s %s %d %d", name, pv.VG, pv.Size, pv.Free))
	}
	for name, vg := range h.VGs {
		lines = append(lines, fmt.Sprintf("vg %s %d %s", name, vg.Size, strings.Join(vg.PVs, ",")))
	}
	for name, lv := range h.LVs {
		lines = append(lines, fmt.Sprintf("lv %s %d %s %s", name, lv.Size, lv.Attr, lv.Fields.Get("lv_tags")))
	}
	sort.Strings(lines)
	f := fnv.New64a()
	for _, l := range lines {
		f.Write([]byte(l))
		f.Write([]byte{'\n'})
	}
	return fmt.Sprintf("%016x", f.Sum64())
}
