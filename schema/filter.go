package schema

import (
	"errors"
	"fmt"

	"github.com/keel-storage/keel/lvm/lvmregex"
)

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

// filters checks every declared filter regex against LVM's dialect
// (lvm/lvmregex): LVM must parse it, and keel refuses what LVM reads
// differently from Go or PCRE, with a hint.
func (c *checker) filters() {
	if c.cfg.LVM == nil || c.cfg.LVM.GlobalFilter == nil {
		return
	}
	g := c.cfg.LVM.GlobalFilter
	bad := false
	for _, l := range []struct {
		field    string
		patterns []string
	}{{"reject", g.Reject}, {"accept", g.Accept}} {
		for i, p := range l.patterns {
			if _, err := lvmregex.Compile(p); err != nil {
				bad = true
				var e *lvmregex.Error
				if !errors.As(err, &e) {
					c.at("filter", err.Error(), "lvm", "globalFilter", l.field, i)
					continue
				}
				c.at("filter", fmt.Sprintf("%q: %v", p, e), "lvm", "globalFilter", l.field, i)
			}
		}
	}
	if bad {
		return
	}
	if _, err := lvmregex.NewFilter(g.Entries()); err != nil {
		c.at("filter", "the generated global_filter: "+err.Error(), "lvm", "globalFilter")
	}
}
