package wipe

import (
	"strings"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/state"
)

// FromHost builds the removal inventory from a probe pass. Tags come from
// the raw lv_tags field; a PV's dm name from its device's sysfs queue entry.
func FromHost(h *model.Host) Inventory {
	inv := Inventory{LVs: make(map[string]LVInfo, len(h.LVs)), PVs: make(map[string]PVInfo, len(h.PVs))}
	for key, lv := range h.LVs {
		var tags []string
		for _, t := range strings.Split(lv.Fields.Get("lv_tags"), ",") {
			if t = strings.TrimSpace(t); t != "" {
				tags = append(tags, t)
			}
		}
		created, _ := state.ParseLVTime(lv.Fields.Get("lv_time"))
		inv.LVs[key] = LVInfo{VG: lv.VG, Name: lv.Name, SegType: lv.SegType, Hidden: lv.Hidden,
			Active: lv.Active, Open: lv.Open, Size: lv.Size, DMName: lv.DMName, Tags: tags,
			UUID: lv.UUID, Created: created, Attr: lv.Attr, Role: lv.Role, Origin: lv.Origin}
	}
	for name, pv := range h.PVs {
		info := PVInfo{Name: pv.Name, VG: pv.VG}
		if q, ok := h.Queues[pv.Device]; ok && pv.Device != "" {
			info.DMName = q.DMName
		}
		inv.PVs[name] = info
	}
	inv.Stack = stackFromHost(h)
	inv.Shared = SharedVGs(h)
	return inv
}
