package plan

import (
	"maps"
	"slices"
	"testing"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/schema/spec"
)

// TestStaleProfiles replays the capture of e2e/sizes/autoextend.sh at 72M
// (tp has keel-autovg-tp-t70-p50 attached, whose file keel wrote) with
// profiles added to LVM's profile directory: a keel profile attached to
// nothing is removed, one the pass attaches, one an LV or a VG names, an
// operator's and one keel did not write are kept, and nothing is judged
// when the names in use are not all known.
func TestStaleProfiles(t *testing.T) {
	old := autoextendProfilePath("keel-autovg-gone-t80-p10")
	_, oldContent := autoextendProfile(thinAutoextend, "autovg/gone", spec.Autoextend{Threshold: 80, Percent: 10}, false)
	for _, c := range []struct {
		name  string
		files map[string]string // added to the profile directory
		edit  func(h *model.Host)
		stale []string // the profiles removed
	}{
		{name: "as captured: the attached profile stays"},
		{name: "a keel profile attached to nothing", files: map[string]string{old: oldContent}, stale: []string{old}},
		{name: "the profile this pass attaches", files: map[string]string{
			autoextendProfilePath("keel-autovg-tp-off"): "# Written by keel: the autoextend policy of thin pool autovg/tp (stale content)\n"}},
		{name: "named by a VG", files: map[string]string{old: oldContent},
			edit: func(h *model.Host) { h.VGs["autovg"].Profile = "keel-autovg-gone-t80-p10" }},
		{name: "named by an LV", files: map[string]string{old: oldContent},
			edit: func(h *model.Host) { h.LVs["autovg/thin1"].Fields.Set("lv_profile", "keel-autovg-gone-t80-p10") }},
		{name: "not keel's pattern or not keel's content", files: map[string]string{
			autoextendProfilePath("keel-spare"):               oldContent,
			autoextendProfilePath("keel-autovg-hand-t80-p10"): "activation {\n\tthin_pool_autoextend_threshold = 80\n}\n"}},
		{name: "an LV without lv_profile (a report before keel asked for it)", files: map[string]string{old: oldContent},
			edit: func(h *model.Host) {
				lv := h.LVs["autovg/thin1"]
				m := maps.Collect(lv.Fields.All())
				delete(m, "lv_profile")
				lv.Fields = model.FieldsOf(m)
			}},
		{name: "a VG read without a PV", files: map[string]string{old: oldContent},
			edit: func(h *model.Host) { h.VGs["autovg"].Attr = "wz-pn-" }},
		{name: "an unreadable profile directory", files: map[string]string{old: oldContent},
			edit: func(h *model.Host) { h.KeelFiles[model.LVMProfileDir].Unknown = "permission denied" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := replayHost(t, "sizes-autoextend-max")
			if v, ok := h.LVs["autovg/tp"].Fields.Lookup("lv_profile"); !ok || v != "keel-autovg-tp-t70-p50" {
				t.Fatalf("capture: tp lv_profile %q (%v)", v, ok)
			}
			for p, content := range c.files {
				h.KeelFiles[p] = &model.KeelFile{Path: p, Content: content}
			}
			if c.edit != nil {
				c.edit(h)
			}
			r := Plan(loadDesired(t, "sizes-autoextend", h), h)
			var found, removed []string
			for _, f := range r.Findings {
				if f.ID == AutoextendStaleProfile {
					found = append(found, f.Object)
				}
			}
			for _, a := range r.Actions {
				for _, f := range a.Files {
					if f.Remove {
						removed = append(removed, f.Path)
						if a.ID != "autoextend.stale_profile:"+f.Path || a.Class != Live || a.Kind != KindFile || len(a.Commands) > 0 {
							t.Errorf("action %+v", a)
						}
					}
				}
			}
			slices.Sort(found)
			if !slices.Equal(found, c.stale) || !slices.Equal(removed, c.stale) {
				t.Errorf("findings on %q, removals %q, want %q", found, removed, c.stale)
			}
		})
	}
}

// TestStaleProfileFromCapture replays e2e/sizes/autoextend.sh's capture
// once tp has its -off profile attached, with the t70-p50 profile keel
// wrote before put back: the state between the attach and the removal
// that keel apply's next round sees. It is stale; the -off profile and
// vpool's t70-p1, both attached, are not.
func TestStaleProfileFromCapture(t *testing.T) {
	h := replayHost(t, "sizes-autoextend-off")
	if h.ThinPools["autovg/tp"].Profile != "keel-autovg-tp-off" {
		t.Fatalf("capture: tp profile %q, want keel-autovg-tp-off", h.ThinPools["autovg/tp"].Profile)
	}
	file := autoextendProfilePath("keel-autovg-tp-t70-p50")
	if f := h.KeelFiles[file]; f != nil {
		t.Fatalf("capture: %s is there: %+v", file, f)
	}
	_, content := autoextendProfile(thinAutoextend, "autovg/tp", spec.Autoextend{Threshold: 70, Percent: 50}, false)
	h.KeelFiles[file] = &model.KeelFile{Path: file, Content: content}
	r := Plan(loadDesired(t, "sizes-autoextend", h), h)
	var stale []string
	for _, f := range r.Findings {
		if f.ID == AutoextendStaleProfile {
			stale = append(stale, f.Object)
		}
	}
	if !slices.Equal(stale, []string{file}) {
		t.Errorf("stale profiles %q, want only %s", stale, file)
	}
	a := actionOf(r, "autoextend.stale_profile:"+file)
	if a == nil || len(a.Files) != 1 || !a.Files[0].Remove || a.Files[0].Path != file {
		t.Errorf("action %+v, want %s removed", a, file)
	}
}
