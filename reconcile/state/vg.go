package state

import (
	"fmt"
	"time"
)

// VG is keel's memory of one declared VG: the vg_uuid it had when keel
// first saw it on its declared PVs. LVM gives every VG a new random UUID at
// vgcreate (lvm2's vgcreate, id_create) and keeps it across vgrename,
// vgextend and pvmove, so another UUID under the same name is another VG:
// one removed and made again, or one that came with a moved disk.
type VG struct {
	// UUID is the vg_uuid keel first saw under the name.
	UUID string `json:"uuid"`
	// FirstSeen is when keel recorded it; Acknowledged, when an operator
	// set it by keel ack-vg instead.
	FirstSeen    time.Time `json:"first_seen"`
	Acknowledged time.Time `json:"acknowledged,omitzero"`
}

// SeeVGs records, for every declared VG name in seen (name -> vg_uuid) that
// has no record yet, its UUID as first seen now, and drops the record of
// every name in gone (a declared VG that keel may create and that LVM no
// longer reports at all, so that the VG keel makes is recorded afresh).
// It reports whether anything changed.
func (st *State) SeeVGs(seen map[string]string, gone []string, now time.Time) bool {
	if st.VGs == nil {
		st.VGs = map[string]VG{}
	}
	changed := false
	for name, uuid := range seen {
		if _, ok := st.VGs[name]; ok || uuid == "" {
			continue
		}
		st.VGs[name] = VG{UUID: uuid, FirstSeen: now.UTC()}
		changed = true
	}
	for _, name := range gone {
		if _, ok := st.VGs[name]; ok {
			delete(st.VGs, name)
			changed = true
		}
	}
	return changed
}

// AckVG records uuid as the identity of VG name, as an operator who checked
// that VG asks (keel ack-vg).
func (st *State) AckVG(name, uuid string, now time.Time) {
	if st.VGs == nil {
		st.VGs = map[string]VG{}
	}
	rec := st.VGs[name]
	if rec.FirstSeen.IsZero() {
		rec.FirstSeen = now.UTC()
	}
	rec.UUID, rec.Acknowledged = uuid, now.UTC()
	st.VGs[name] = rec
}

// JudgeVG compares the vg_uuid LVM reports under a declared name with keel's
// record of it (known false: none yet). It returns "" when they agree or
// keel has no record, and otherwise why keel holds every change in the VG.
func JudgeVG(rec VG, known bool, uuid string) string {
	if !known || rec.UUID == "" || uuid == "" || rec.UUID == uuid {
		return ""
	}
	return fmt.Sprintf("its vg_uuid is %s, but keel first saw it as %s (at %s): another VG under the same name",
		uuid, rec.UUID, Stamp(rec.FirstSeen))
}
