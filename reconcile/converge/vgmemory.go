package converge

import (
	"time"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/plan/removal"
)

// seeVGs records, before a plan on h, the vg_uuid of every declared VG keel
// sees on its declared PVs for the first time, and forgets the declared VGs
// that are gone (plan.VGSightings), in every mode: a dry run and the
// daemon in audit record too, so the UUID keel judges by is the one it saw
// first, not the one there when it began to act. The records go into the
// planner's memory (plan.Memory.VGs). A state that cannot be read leaves
// them out: removals are then held by Memory.Held when there are absent
// names, and the log says so.
func (l *Loop) seeVGs(h *model.Host) {
	if l.desired == nil || h == nil {
		return
	}
	seen, gone := plan.VGSightings(l.desired, h)
	if len(seen) == 0 && len(gone) == 0 {
		l.mem.VGs = nil
		return
	}
	st, err := l.state.LoadSeeingVGs(seen, gone, time.Now())
	if err != nil {
		l.log.Error("keel's state cannot be read: the VG identities are not judged", "err", err)
		l.mem.VGs = nil
		return
	}
	l.mem.VGs = st.VGs
}

// wipeVGs puts into a removal request the declared PVs of every declared VG
// and, with records set, keel's records of their vg_uuids (seeVGs records
// first sights on h first; a node snapshot is another host, whose records
// keel does not have), so that removal refuses in a VG that is not the
// declared one (removal.VGIdentity) with the finding's own line.
func (l *Loop) wipeVGs(req *removal.Request, h *model.Host, records bool) {
	req.PVs = make(map[string][]string, len(l.desired.VolumeGroups))
	for name, vg := range l.desired.VolumeGroups {
		req.PVs[name] = vg.PVs
	}
	if records {
		l.seeVGs(h)
		req.VGs = l.mem.VGs
	}
}
