package plan

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/keel-storage/keel/probes/model"
)

// Superseded autoextend profiles. A change of a pool's policy attaches a
// profile of another name (planAutoextend), and a pool at its maximum
// moves to its -off profile: the profile it had stays in LVM's profile
// directory. LVM reads a metadata profile by the name the VG metadata
// carries, from this host's config/profile_dir, when a command or dmeventd
// processes the LV or VG that names it (lvm.conf(5), lvm(8) "Metadata
// profiles"): a file no LV and no VG on this host names is read by
// nothing here. Its name is in no other host's metadata either through
// this file: on a shared VG every node reads its own profile directory,
// so removing this node's file is safe exactly when no LV or VG this node
// sees names it. keel removes only what it wrote: a name of its pattern
// (keel-<dm name>-t<T>-p<P> or keel-<dm name>-off) whose content starts
// with its header; an operator's profile is never judged.

// keelProfileRE matches the names autoextendProfile gives.
var keelProfileRE = regexp.MustCompile(`^` + regexp.QuoteMeta(model.KeelProfilePrefix) + `.+-(t[0-9]+-p[0-9]+|off)$`)

// keelProfileHeader starts every profile autoextendProfile writes.
const keelProfileHeader = "# Written by keel: the autoextend policy of "

// planStaleProfiles removes the keel profiles that no LV or VG on this
// host names (lv_profile, vg_profile) and this pass does not attach. It
// judges nothing when the names in use are not all known: a report that
// did not carry lv_profile (a snapshot captured before keel asked for it),
// a VG read without some of its PVs or with errors, an LV LVM could not
// report, or a profile directory the probe could not read.
func (p *planner) planStaleProfiles() {
	if dir := p.h.KeelFiles[model.LVMProfileDir]; dir == nil || dir.Unknown != "" || dir.Missing {
		return
	}
	used := map[string]bool{}
	for _, vg := range p.h.VGs {
		if vg.Partial() || len(vg.Errors) > 0 {
			return
		}
		used[vg.Profile] = true
	}
	for _, lv := range p.h.LVs {
		name, ok := lv.Fields.Lookup("lv_profile")
		if !ok || len(lv.Errors) > 0 {
			return
		}
		used[name] = true
	}
	for _, file := range slices.Sorted(maps.Keys(p.h.KeelFiles)) {
		f := p.h.KeelFiles[file]
		name, ok := strings.CutSuffix(path.Base(file), ".profile")
		if !ok || path.Dir(file) != model.LVMProfileDir || !keelProfileRE.MatchString(name) ||
			f.Missing || f.Unknown != "" || !strings.HasPrefix(f.Content, keelProfileHeader) ||
			used[name] || p.profiles[name] {
			continue
		}
		key := p.add(Finding{ID: AutoextendStaleProfile, Object: file,
			Message:  fmt.Sprintf("LVM profile %s, written by keel for an autoextend policy, is attached to no LV or VG on this host (a policy that changed, or a pool at its maximum or gone)", name),
			Expected: "attached, or removed", Observed: "attached to nothing",
			Remedy: "keel apply (removes " + file + ")",
		})
		p.act(phaseChange+2, Action{ID: "autoextend.stale_profile:" + file, Kind: KindFile, Class: Live, Object: file,
			Summary:  fmt.Sprintf("remove LVM profile %s, which no LV or VG uses", file),
			Files:    []FileWrite{{Path: file, Remove: true}},
			Remedies: []string{key}})
	}
}
