package plan

import (
	"fmt"
	"math"
	"strings"

	"github.com/keel-storage/keel/lvm/units"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/probes/shell"
	"github.com/keel-storage/keel/schema/spec"
)

// Audit thresholds for thin pools: the schema's defaults, and the chunk
// size from which small random writes pay for megabytes of allocation.
const (
	auditThinDataAlert     = 85
	auditThinMetadataAlert = 75
	auditMaxChunkBytes     = 1 << 20
)

// planThin judges one declared thin pool.
func (p *planner) planThin(vgName, name string, want spec.ThinPool, phase int) {
	object := vgName + "/" + name
	tp := p.h.ThinPools[object]
	wantChunk := want.ChunkSize.Bytes
	if tp == nil {
		p.planMissingThin(vgName, name, want, phase)
		return
	}
	p.finishThinCreate(object, p.h.LVs[object], phase)
	p.planThinSize(object, tp, want)
	p.planAutoextend(thinAutoextend, autoextendPool{object: object, size: tp.DataSize, active: tp.Status != nil,
		monitor: tp.Monitor, profile: tp.Profile}, want.Autoextend)
	if wantChunk != 0 && tp.ChunkSize != wantChunk {
		key := p.add(Finding{ID: ThinChunkSize, Object: object,
			Message:  "chunk size differs from the declared one; it is fixed at creation",
			Expected: units.FormatSize(wantChunk), Observed: units.FormatSize(tp.ChunkSize),
			Remedy: "rebuild the pool (keel never retries this)",
		})
		p.reportOnly(ThinChunkSize, object, "chunk size is fixed at creation: rebuild the pool to change it", key)
	}
	if want.RAID != nil {
		strip, disks := want.RAID.StripeSize.Bytes, uint64(max(want.RAID.DataDisks, 0))
		if stripe := strip * disks; strip != 0 && disks != 0 && stripe/disks == strip && tp.ChunkSize%stripe != 0 {
			key := p.add(Finding{ID: ThinStripeAlignment, Object: object,
				Message: fmt.Sprintf("chunk %s is not a multiple of the full RAID stripe (%s x %d = %s): partial-stripe writes",
					units.FormatSize(tp.ChunkSize), want.RAID.StripeSize, want.RAID.DataDisks, units.FormatSize(stripe)),
				Expected: "a multiple of " + units.FormatSize(stripe), Observed: units.FormatSize(tp.ChunkSize),
				Remedy: "rebuild the pool with a chunk covering the stripe",
			})
			p.reportOnly(ThinStripeAlignment, object, "chunk size is fixed at creation: rebuild to align it", key)
		}
	}
	if want.Zero != nil && tp.Zero != *want.Zero {
		key := p.add(Finding{ID: ThinZeroing, Object: object,
			Message:  "zeroing of new chunks is " + onOff(tp.Zero) + ", declared " + onOff(*want.Zero),
			Expected: onOff(*want.Zero), Observed: onOff(tp.Zero),
			Remedy: fmt.Sprintf("lvchange -Z %s %s", yn(*want.Zero), object),
		})
		p.act(phaseChange, Action{ID: "thin.zeroing:" + object, Kind: KindCommand, Class: Live, Object: object,
			Summary:  fmt.Sprintf("turn zeroing %s on %s", onOff(*want.Zero), object),
			Commands: [][]string{{"lvchange", "-Z", yn(*want.Zero), object}}, Remedies: []string{key}})
	}
	if meta := want.MetadataSize.Bytes; want.MetadataSize.IsSet() && meta > 0 && tp.MetadataSize < meta {
		grow := []string{"lvextend", "--poolmetadatasize", want.MetadataSize.LVMArg(), object}
		key := p.add(Finding{ID: ThinMetadataSize, Object: object,
			Message:  "the metadata LV is smaller than declared",
			Expected: units.FormatSize(meta), Observed: units.FormatSize(tp.MetadataSize),
			Remedy: strings.Join(grow, " "),
		})
		p.act(phaseChange, Action{ID: "thin.metadata_size:" + object, Kind: KindCommand, Class: Live, Object: object,
			Summary:  fmt.Sprintf("grow the metadata of %s to %s", object, want.MetadataSize),
			Commands: [][]string{grow}, Remedies: []string{key}})
	}
	p.checkThinHealth(tp, want.DataPercentAlert, want.MetadataPercentAlert)
	p.planOverprovision(tp, want)
}

// overprovisionKind is the Level kind of a thin pool's overprovisioning:
// its Percent is the thin LVs' virtual sizes added up, in percent of the
// pool's data size; its Alert is maxOverprovision in percent, 0 when not
// declared.
const overprovisionKind = "thin_overprovision"

// thinVirtualSum is the virtual sizes of tp's thin LVs added up, thin
// snapshots included, as lvm2 adds them up when it warns that the "Sum of
// all thin volume sizes ... exceeds the size of thin pool" (lvmthin(7),
// "Over-provisioning"; the check on lvcreate and lvextend of a thin LV in
// lib/metadata/thin_manip.c, tested by test/shell/thin-overprovisioning.sh).
func (p *planner) thinVirtualSum(tp *model.ThinPool) uint64 {
	var sum uint64
	for _, name := range tp.ThinLVs {
		if lv := p.h.LVs[name]; lv != nil {
			sum += lv.Size
		}
	}
	return sum
}

// planOverprovision publishes the overprovisioning of thin pool tp as a
// level and, with a declared maxOverprovision, raises thin.overprovisioned
// above it. The remedy grows the pool to the smallest size, in whole
// extents, that brings the ratio down to the maximum: a live lvextend
// when the pool's size is not declared, else the declared size to raise
// (keel then grows the pool itself: planThinSize), so that no remedy moves
// away from the desired state.
func (p *planner) planOverprovision(tp *model.ThinPool, want spec.ThinPool) {
	if tp.DataSize == 0 {
		return
	}
	sum := p.thinVirtualSum(tp)
	ratio := float64(sum) / float64(tp.DataSize)
	maxRatio := want.MaxOverprovision
	p.level(overprovisionKind, tp.LV, ratio*100, maxRatio*100)
	if maxRatio <= 0 || ratio <= maxRatio {
		return
	}
	extent := p.vgExtent(tp.VG)
	need := roundUpExtent(uint64(math.Ceil(float64(sum)/maxRatio)), extent)
	f := Finding{ID: ThinOverprovisioned, Object: tp.LV,
		Message: fmt.Sprintf("the thin LVs of %s (%d) add up to %s, %.2f times its %s of data, above its maxOverprovision %g",
			tp.LV, len(tp.ThinLVs), units.FormatSize(sum), ratio, units.FormatSize(tp.DataSize), maxRatio),
		Expected: fmt.Sprintf("at most %g x %s = %s", maxRatio, units.FormatSize(tp.DataSize), units.FormatSize(uint64(maxRatio*float64(tp.DataSize)))),
		Observed: fmt.Sprintf("%s (%.2f x)", units.FormatSize(sum), ratio),
	}
	switch {
	case want.Size.IsSet():
		f.Remedy = fmt.Sprintf("declare size: %q for %s (keel grows it), or remove thin LVs from it", units.LVMArg(need), tp.LV)
	case !p.vgRoom(tp.VG, need-tp.DataSize):
		msg, remedy := p.noRoom(tp.VG, need-tp.DataSize)
		f.Message, f.Remedy = f.Message+msg, remedy
	default:
		f.Remedy = shell.Join([]string{"lvextend", "-L", units.LVMArg(need), tp.LV})
	}
	p.add(f)
}

// planMissingThin reports a declared thin pool that is not there and, with
// create: true, plans its creation. An LV under the pool's name that is not
// a thin pool is one of two things:
//
//   - the plain LV lvm2 commits first when it makes a thin pool: create_pool
//     (lib/metadata/pool_manip.c) allocates the metadata area as a visible
//     striped LV under the pool's name, commits the VG, wipes that area and
//     only then makes the _tmeta and _tdata sub-LVs and the pool, in a
//     second commit ("If killed here, only the VISIBLE striped pool LV is
//     left and user could easily remove it"). keel tags the pool on its
//     lvcreate line (CreateTag; the tags are set before that first commit,
//     _lv_create_an_lv in lib/metadata/lv_manip.c), so a tagged plain LV is
//     the metadata area of a creation keel began, holding nothing but
//     zeroes: keel removes it and creates the pool again;
//   - any other LV: someone else's, which keel never touches (an lvcreate
//     would only fail with "already exists", pass after pass).
func (p *planner) planMissingThin(vgName, name string, want spec.ThinPool, phase int) {
	object := vgName + "/" + name
	create := want.Create && want.Size.IsSet()
	f := Finding{ID: ThinMissing, Object: object,
		Message:  "thin pool " + object + " does not exist",
		Expected: fmt.Sprintf("thin pool of %s, chunk %s", orUnset(want.Size.Text), want.ChunkSize), Observed: "no such pool",
		Remedy: createRemedy(create, "lvcreate --type thin-pool with chunk size, zeroing and metadata size on the creation line"),
	}
	var cmds [][]string
	switch lv := p.h.LVs[object]; {
	case lv == nil:
	case hasTag(lv, CreateTag) && (lv.SegType == "linear" || lv.SegType == "striped") && !lv.Open:
		f.Message = fmt.Sprintf("the creation of thin pool %s stopped before it ended: %s is still the plain LV lvm2 makes first (the pool's metadata area, zeroed)", object, object)
		f.Observed = fmt.Sprintf("%s LV of %s with tag %s", lv.SegType, units.FormatSize(lv.Size), CreateTag)
		cmds = append(cmds, []string{"lvremove", "-y", object})
		f.Remedy = shell.Join(cmds[0])
		if want.Size.IsSet() {
			// The whole sequence keel runs (create: true), as typed.
			f.Remedy = shellAnd([][]string{cmds[0], thinCreateArgs(vgName, name, want), {"lvchange", "--deltag", CreateTag, object}})
		}
	default:
		f.Observed = fmt.Sprintf("%s is a %s LV of %s, not a thin pool", object, lv.SegType, units.FormatSize(lv.Size))
		f.Remedy = fmt.Sprintf("declare the pool under another name: the LV %s is not a pool keel began, and keel never removes or converts it", object)
		p.add(f)
		return
	}
	key := p.add(f)
	if !create {
		return
	}
	cmds = append(cmds, thinCreateArgs(vgName, name, want), []string{"lvchange", "--deltag", CreateTag, object})
	p.act(phaseCreateThin+phase, Action{ID: "thin.create:" + object, Kind: KindCommand, Class: Live, Object: object,
		Summary:  fmt.Sprintf("create thin pool %s of %s with %s chunks", object, want.Size, want.ChunkSize),
		Commands: cmds, Remedies: []string{key}})
}

// finishThinCreate ends the creation of a thin pool that lvm2 made whole
// but keel did not see through: the pool still carries CreateTag, keel
// killed after lvcreate's last commit. lvcreate then activates the pool
// (_lv_create_an_lv, lib/metadata/lv_manip.c); killed there, it leaves the
// pool inactive with its _tdata and _tmeta active (e2e/kill, kind
// thin-partial), or, killed between the pool's table load and its resume,
// with the pool's device holding an inactive table only (kind
// thin-lvcreate). lvm2 refuses to activate a pool while a component of it
// is active ("Activation of logical volume … is prohibited while logical
// volume …_tmeta is active", activate_lv in lib/activate/activate.c), so
// keel takes the partial stack down first (stackDownCmds), then activates
// the pool it began (an inactive pool of someone else's it only reports:
// vg.inactive), and drops the tag.
func (p *planner) finishThinCreate(object string, lv *model.LV, phase int) {
	if !hasTag(lv, CreateTag) {
		return
	}
	var cmds [][]string
	state := "active"
	if !lv.Active {
		state = "inactive"
		if down := p.stackDownCmds(object); len(down) > 0 {
			state = "inactive, its components active"
			if p.thinPoolTableLoaded(lv) {
				state = "inactive, its thin-pool table loaded but not live"
			}
			cmds = append(cmds, down...)
		}
		cmds = append(cmds, []string{"lvchange", "-ay", object})
	}
	cmds = append(cmds, []string{"lvchange", "--deltag", CreateTag, object})
	key := p.add(Finding{ID: ThinCreateInterrupted, Object: object,
		Message:  fmt.Sprintf("the creation of thin pool %s stopped after lvm2 made the pool (%s, still tagged %s)", object, state, CreateTag),
		Expected: "an active pool without tag " + CreateTag, Observed: "pool with tag " + CreateTag + ": " + state,
		Remedy: shellAnd(cmds),
	})
	p.act(phaseCreateThin+phase, Action{ID: "thin.create:" + object, Kind: KindCommand, Class: Live, Object: object,
		Summary:  "finish the interrupted creation of thin pool " + object,
		Commands: cmds, Remedies: []string{key}})
}

// thinCreateArgs is the lvcreate that makes a declared thin pool, every
// size with an explicit unit (a bare number is MiB to -L and
// --poolmetadatasize but KiB to --chunksize), tagged CreateTag until the
// pool is whole.
func thinCreateArgs(vgName, name string, want spec.ThinPool) []string {
	args := []string{"lvcreate", "-y", "--type", "thin-pool", "-L", want.Size.LVMArg(), "--chunksize", want.ChunkSize.LVMArg()}
	if want.Zero != nil {
		args = append(args, "-Z", yn(*want.Zero))
	}
	if want.MetadataSize.IsSet() {
		args = append(args, "--poolmetadatasize", want.MetadataSize.LVMArg())
	}
	return append(args, "--addtag", CreateTag, "-n", name, vgName)
}

func orUnset(s string) string {
	if s == "" {
		return "unset size"
	}
	return s
}

// checkThinHealth covers the dm-thin status and the fill levels.
func (p *planner) checkThinHealth(tp *model.ThinPool, dataAlert, metaAlert float64) {
	if st := tp.Status; st != nil {
		var bad []string
		for _, c := range []struct {
			on   bool
			what string
		}{{st.Failed, "failed"}, {st.NeedsCheck, "needs_check"}, {st.OutOfDataSpace, "out_of_data_space"}, {st.ReadOnly, "read-only"}} {
			if c.on {
				bad = append(bad, c.what)
			}
		}
		if len(bad) > 0 {
			p.add(Finding{ID: ThinHealth, Object: tp.LV,
				Message:  "thin pool reports " + strings.Join(bad, ", "),
				Expected: "rw, no needs_check", Observed: strings.Join(bad, ", "),
				Remedy: "free or add data space; for needs_check deactivate and run lvconvert --repair",
			})
		}
	}
	p.level("thin_data", tp.LV, tp.DataPercent, dataAlert)
	p.level("thin_metadata", tp.LV, tp.MetadataPercent, metaAlert)
	if tp.DataPercent >= 0 && tp.DataPercent >= dataAlert {
		p.add(Finding{ID: ThinDataUsage, Object: tp.LV,
			Message:  fmt.Sprintf("thin pool data is %s used, alert at %s", pct(tp.DataPercent), pct(dataAlert)),
			Expected: "below " + pct(dataAlert), Observed: pct(tp.DataPercent),
			Remedy: "lvextend the pool or discard unused blocks in the guests",
		})
	}
	if tp.MetadataPercent >= 0 && tp.MetadataPercent >= metaAlert {
		p.add(Finding{ID: ThinMetadataUsage, Object: tp.LV,
			Message:  fmt.Sprintf("thin pool metadata is %s used, alert at %s", pct(tp.MetadataPercent), pct(metaAlert)),
			Expected: "below " + pct(metaAlert), Observed: pct(tp.MetadataPercent),
			Remedy: "lvextend --poolmetadatasize +<size> " + tp.LV,
		})
	}
}

// auditThin judges an observed thin pool against the reference rules.
func (p *planner) auditThin(tp *model.ThinPool) {
	if tp.ChunkSize >= auditMaxChunkBytes {
		p.add(Finding{ID: ThinChunkSize, Object: tp.LV,
			Message:  "chunk size is " + units.FormatSize(tp.ChunkSize) + ": every first 4 KiB write allocates a whole chunk",
			Expected: "512K, or one full RAID stripe", Observed: units.FormatSize(tp.ChunkSize),
			Remedy: "rebuild with --chunksize 512k (or the RAID stripe) when convenient",
		})
	}
	if tp.Zero {
		p.add(Finding{ID: ThinZeroing, Object: tp.LV,
			Message:  "zeroing is on (LVM's default): new chunks are written twice",
			Expected: "off, where guests cannot read stale data", Observed: "on",
			Remedy: "lvchange -Z n " + tp.LV,
		})
	}
	p.checkThinHealth(tp, auditThinDataAlert, auditThinMetadataAlert)
	p.planOverprovision(tp, spec.ThinPool{})
}
