package removal

import (
	"strings"
	"time"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/state"
)

// observed is the probed host with what removal derives from it once per
// plan: what lies under each LV (alloc.go) and the shared VGs (shared.go).
type observed struct {
	*model.Host
	stack  stack
	shared map[string]SharedVG
	// byDM maps an active LV's device-mapper name to its "vg/lv", so that
	// the LV that is a PV is found without a walk over every LV.
	byDM map[string]string
}

// observe derives them; shared names the VGs the desired state declares
// shared.
func observe(h *model.Host, shared ...string) *observed {
	byDM := make(map[string]string, len(h.LVs))
	for key, lv := range h.LVs {
		if lv.DMName != "" {
			byDM[lv.DMName] = key
		}
	}
	return &observed{Host: h, stack: stackFromHost(h), shared: SharedVGs(h, shared...), byDM: byDM}
}

// hasTag reports whether lv carries the LVM tag tag (the raw lv_tags field,
// comma-separated).
func hasTag(lv *model.LV, tag string) bool {
	for _, t := range strings.Split(lv.Fields.Get("lv_tags"), ",") {
		if strings.TrimSpace(t) == tag {
			return true
		}
	}
	return false
}

// created is lv's creation time (lv_time), zero when LVM reported none or
// keel cannot parse it: state.Judge then cannot tell the LV from another.
func created(lv *model.LV) time.Time {
	t, _ := state.ParseLVTime(lv.Fields.Get("lv_time"))
	return t
}

// pvDMName is the device-mapper name of pv's device when it is a dm device
// (an LV), from its sysfs queue entry; "" otherwise.
func (o *observed) pvDMName(pv *model.PV) string {
	if pv.Device == "" {
		return ""
	}
	if q := o.Queues[pv.Device]; q != nil {
		return q.DMName
	}
	return ""
}
