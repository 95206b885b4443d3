package spec

import "github.com/keel-storage/keel/lvm/lvmregex"

// Entries is the devices/global_filter the declared filter generates, as
// lvm.conf entries: "r|…|" for each reject, then "a|…|" for each accept,
// then "r|.*|" when there are accepts (an allow-list). Nothing is appended
// after rejects alone: LVM uses a device that no entry matches, while an
// accept-all after the rejects would accept every LV by its /dev/dm-N name
// (lib/filters/filter-regex.c; see lvmregex.Filter.Decide).
func (g *GlobalFilter) Entries() []string {
	if g == nil {
		return nil
	}
	var out []string
	for _, r := range g.Reject {
		out = append(out, lvmregex.Entry{Regex: r}.String())
	}
	for _, a := range g.Accept {
		out = append(out, lvmregex.Entry{Accept: true, Regex: a}.String())
	}
	if len(g.Accept) > 0 {
		out = append(out, lvmregex.Entry{Regex: ".*"}.String())
	}
	return out
}
