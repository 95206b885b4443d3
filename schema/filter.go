package schema

import (
	"errors"
	"fmt"

	"github.com/keel-storage/keel/lvm/lvmregex"
)

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
