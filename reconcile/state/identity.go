package state

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// LV is what the identity rules need of an LV found under an absent name.
type LV struct {
	// UUID is lv_uuid.
	UUID string
	// Created is lv_time; zero when LVM reported none keel can read.
	Created time.Time
}

// lvTimeLayout is LVM's default report/time_format, "%Y-%m-%d %T %z"
// (lib/config/defaults.h DEFAULT_TIME_FORMAT in lvm2).
const lvTimeLayout = "2006-01-02 15:04:05 -0700"

// ParseLVTime reads an lv_time field. LVM stores the creation time as whole
// seconds since the epoch and prints it with report/time_format; keel reads
// the default format and plain epoch seconds ("%s"). Anything else (a host
// with another time_format, an LV made by an LVM too old to record it) gives
// false, and the first-seen rule then refuses (see Judge).
func ParseLVTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, false
	}
	if t, err := time.Parse(lvTimeLayout, s); err == nil {
		return t, true
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
		return time.Unix(n, 0), true
	}
	return time.Time{}, false
}

// Judge decides whether lv, found under an absent name, is the LV the
// absent entry asks to remove. rec is keel's record of the name; known is
// false when keel has none. pin is the lv_uuid the absent entry pins, ""
// when it pins none. It returns "" when the LV may be removed, and
// otherwise why not:
//
//  1. An LV keel bound to the name (it began to remove it) is removed, unless
//     keel already finished removing that very LV (it came back, e.g. by
//     vgcfgrestore): never twice.
//  2. An entry that pins a uuid means that LV and no other: the LV with the
//     pinned uuid is removed whatever keel recorded of the name (the desired
//     state names it exactly), every other LV under the name is kept.
//  3. Once keel bound any LV to the name, every other LV under it is a
//     reused name.
//  4. A name keel has no record of is judged by nothing: every caller records
//     the first sight before it plans, so no record means it could not be
//     written (a read-only /var/lib/keel, keel check run by a user), and an
//     absent entry may have been written long before the LV was made (the
//     audit-first rollout: a week of reading without a record, then a VM id
//     reused). Nothing is removed for it until its first sight is recorded.
//  5. Otherwise the LV must have been created (lv_time) strictly before the
//     second keel first saw the name in absent: an LV made at or after that
//     moment, or one whose creation time is unknown, was not what the
//     desired state meant.
func Judge(rec Absent, known bool, lv LV, pin string) string {
	for _, b := range rec.Bound {
		if b.UUID != lv.UUID {
			continue
		}
		if b.Removed.IsZero() {
			return ""
		}
		return fmt.Sprintf("keel already removed this LV (uuid %s) at %s and it is back; keel never removes an LV twice",
			lv.UUID, Stamp(b.Removed))
	}
	if pin != "" {
		if lv.UUID == pin {
			return ""
		}
		return fmt.Sprintf("the absent entry pins uuid %s; this LV has uuid %s (created %s)", pin, lv.UUID, Stamp(lv.Created))
	}
	if n := len(rec.Bound); n > 0 {
		last := rec.Bound[n-1]
		return fmt.Sprintf("a reused name: keel removed the LV with uuid %s under this name (at %s); this is another LV (uuid %s, created %s)",
			last.UUID, Stamp(last.Started), lv.UUID, Stamp(lv.Created))
	}
	if !known || rec.FirstSeen.IsZero() {
		return fmt.Sprintf("keel has no record of when it first saw the name in absent (its state could not be written), so it cannot tell whether this LV (uuid %s, created %s) was made after the entry",
			lv.UUID, Stamp(lv.Created))
	}
	first := rec.FirstSeen.Truncate(time.Second)
	switch {
	case lv.Created.IsZero():
		return fmt.Sprintf("LVM reports no creation time (lv_time) keel can read for it, so keel cannot tell whether it existed when the name was first seen in absent (%s)",
			Stamp(rec.FirstSeen))
	case !lv.Created.Before(first):
		return fmt.Sprintf("it was created at %s, after keel first saw the name in absent (%s): a reused name",
			Stamp(lv.Created), Stamp(rec.FirstSeen))
	}
	return ""
}

// Stamp writes a recorded time as keel's messages show it: RFC 3339 in
// UTC, "unknown" for a zero time.
func Stamp(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format(time.RFC3339)
}

// See records now as the first sighting of every absent name ("vg/lv") that
// has no record yet, and reports whether it added any.
func (st *State) See(names []string, now time.Time) bool {
	added := false
	for _, n := range names {
		if _, ok := st.Absent[n]; ok {
			continue
		}
		st.Absent[n] = Absent{FirstSeen: now.UTC()}
		added = true
	}
	return added
}

// Bind records that keel begins to remove lv under name ("vg/lv"). It is
// recorded (and saved) before the first change to the LV, so a crash
// anywhere after leaves the binding that lets the next run finish it, and
// only it. Binding an LV already bound changes nothing.
func (st *State) Bind(name string, lv LV, now time.Time) {
	rec, ok := st.Absent[name]
	if !ok {
		rec.FirstSeen = now.UTC()
	}
	if slices.ContainsFunc(rec.Bound, func(b Binding) bool { return b.UUID == lv.UUID }) {
		return
	}
	rec.Bound = append(rec.Bound, Binding{UUID: lv.UUID, Created: lv.Created.UTC(), Started: now.UTC()})
	st.Absent[name] = rec
}

// Removed records that lvremove of the LV with uuid, bound under name,
// succeeded.
func (st *State) Removed(name, uuid string, now time.Time) {
	rec := st.Absent[name]
	for i := range rec.Bound {
		if rec.Bound[i].UUID == uuid && rec.Bound[i].Removed.IsZero() {
			rec.Bound[i].Removed = now.UTC()
		}
	}
	st.Absent[name] = rec
}
