package removal

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/keel-storage/keel/probes/model"
)

// refuseDependents refuses an LV that other LVs depend on, whose lvremove
// would take them along (lvm2 lib/metadata/lv_manip.c,
// lv_remove_with_dependencies: an origin's snapshots are removed first, and
// so are the thin LVs that use an external origin; `lvremove --yes` answers
// the prompt). Zeroing it first would also destroy what they read from it.
// A thin LV with thin snapshots is not refused: thin snapshots share the
// pool's blocks, not the origin LV, and outlive it.
func (o *observed) refuseDependents(lv *model.LV) error {
	roles := strings.Split(lv.Role, ",")
	// An external origin also shows 'o' in lv_attr (seen in the guest:
	// "ori-------", role public,origin,extthinorigin); the attribute only
	// stands in for the role when LVM reported none.
	external := slices.Contains(roles, "extthinorigin")
	thick := slices.Contains(roles, "thickorigin") ||
		(!external && lv.Role == "" && len(lv.Attr) > 0 && (lv.Attr[0] == 'o' || lv.Attr[0] == 'O'))
	if !thick && !external {
		return nil
	}
	var deps []string
	for _, d := range o.LVs {
		if d.VG == lv.VG && d.Origin == lv.Name && d.Name != lv.Name {
			deps = append(deps, d.VG+"/"+d.Name)
		}
	}
	sort.Strings(deps)
	list := strings.Join(deps, ", ")
	if list == "" {
		list = "(not listed)"
	}
	if thick {
		return fmt.Errorf("%w: is the origin of snapshot(s) %s: lvremove would remove them with it, and zeroing it first fills them with its old blocks; remove or merge the snapshots first", ErrRefused, list)
	}
	return fmt.Errorf("%w: is the external origin of thin LV(s) %s: they read their unwritten blocks from it, and lvremove would remove them with it; remove those thin LVs first", ErrRefused, list)
}
