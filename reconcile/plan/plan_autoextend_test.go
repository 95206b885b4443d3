package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/schema/spec"
)

// autoextendStep follows lvextend --use-policies: percent of the pool's
// extents rounded up to an extent, at least the VDO slab minimum. The
// e2e scenario's pool goes 32M, 48M, 72M at 50%.
func TestAutoextendStep(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		size, extent, min uint64
		pct               int
		want              uint64
	}{
		{32 * mib, 4 * mib, 0, 50, 48 * mib},
		{48 * mib, 4 * mib, 0, 50, 72 * mib},
		{72 * mib, 4 * mib, 0, 50, 108 * mib},
		{8 << 30, 4 * mib, 0, 20, 8<<30 + 410*4*mib}, // 2048 extents * 20% = 409.6, rounded up
		{40 * mib, 4 * mib, 0, 1, 44 * mib},
		{10 << 30, 4 * mib, 2<<30 + 4*mib, 10, 10<<30 + 2<<30 + 4*mib}, // a VDO step is at least a slab
	} {
		if got := autoextendStep(c.size, c.extent, c.min, c.pct); got != c.want {
			t.Errorf("autoextendStep(%d, %d, %d, %d%%) = %d, want %d", c.size, c.extent, c.min, c.pct, got, c.want)
		}
	}
}

// TestAutoextendThin replays the thin capture (tp: 8G of data, monitored,
// no profile, 4 MiB extents; a snapshot taken before keel read LVM's
// profile directory) against autoextend policies: the profile attached,
// the maximum enforced, a size above the declared one within the maximum
// left alone, and an unmonitored pool reported.
func TestAutoextendThin(t *testing.T) {
	h := replayHost(t, "thin")
	if tp := h.ThinPools["thinvg/tp"]; tp.Monitor != "monitored" || tp.Profile != "" {
		t.Fatalf("capture: tp monitor %q profile %q, want monitored and none", tp.Monitor, tp.Profile)
	}
	for _, c := range []struct {
		name     string
		policy   *spec.Autoextend
		size     string
		monitor  string // replaces the captured seg_monitor when set
		findings []string
		commands [][]string
	}{
		{name: "policy below its maximum", policy: &spec.Autoextend{Threshold: 70, Percent: 20, Maximum: size(t, "16G")},
			findings: []string{"autoextend.policy@thinvg/tp"},
			commands: [][]string{{"lvchange", "--metadataprofile", "keel-thinvg-tp-t70-p20", "thinvg/tp"}}},
		{name: "next step passes the maximum", policy: &spec.Autoextend{Threshold: 70, Percent: 20, Maximum: size(t, "9G")},
			findings: []string{"autoextend.at_maximum@thinvg/tp", "autoextend.policy@thinvg/tp"},
			commands: [][]string{{"lvchange", "--metadataprofile", "keel-thinvg-tp-off", "thinvg/tp"}}},
		// 8G and 20 % of its 2,048 extents of 4M, rounded up as lvm2's
		// _adjust_amount does: 410 extents, 9,832M, which the maximum
		// allows exactly.
		{name: "next step lands on the maximum", policy: &spec.Autoextend{Threshold: 70, Percent: 20, Maximum: size(t, "9832M")},
			findings: []string{"autoextend.policy@thinvg/tp"},
			commands: [][]string{{"lvchange", "--metadataprofile", "keel-thinvg-tp-t70-p20", "thinvg/tp"}}},
		{name: "above its declared size, within its maximum", policy: &spec.Autoextend{Threshold: 70, Percent: 20, Maximum: size(t, "16G")}, size: "4G",
			findings: []string{"autoextend.policy@thinvg/tp"},
			commands: [][]string{{"lvchange", "--metadataprofile", "keel-thinvg-tp-t70-p20", "thinvg/tp"}}},
		{name: "above its declared size, no policy", size: "4G",
			findings: []string{"thin.size@thinvg/tp"}},
		{name: "unmonitored", policy: &spec.Autoextend{Threshold: 80, Percent: 10, Maximum: size(t, "16G")}, monitor: "not monitored",
			findings: []string{"autoextend.policy@thinvg/tp", "autoextend.unmonitored@thinvg/tp"},
			commands: [][]string{{"lvchange", "--metadataprofile", "keel-thinvg-tp-t80-p10", "thinvg/tp"}, {"lvchange", "--monitor", "y", "thinvg/tp"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := replayHost(t, "thin")
			if c.monitor != "" {
				h.ThinPools["thinvg/tp"].Monitor = c.monitor
			}
			d := loadDesired(t, "thin", h)
			want := d.VolumeGroups["thinvg"].ThinPools["tp"]
			want.Autoextend = c.policy
			if c.size != "" {
				want.Size = size(t, c.size)
			}
			d.VolumeGroups["thinvg"].ThinPools["tp"] = want
			r := Plan(d, h)
			var got []string
			for _, f := range r.Findings {
				if f.Object == "thinvg/tp" {
					got = append(got, f.Key())
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, c.findings) {
				t.Errorf("findings %q, want %q", got, c.findings)
			}
			var cmds [][]string
			for _, a := range r.Actions {
				if a.Object == "thinvg/tp" {
					if a.Class != Live {
						t.Errorf("%s is %s, want live", a.ID, a.Class)
					}
					if len(a.Files) > 0 {
						t.Errorf("%s writes %v though the capture did not read the profile directory", a.ID, a.Files)
					}
					cmds = append(cmds, a.Commands...)
				}
			}
			if !slices.EqualFunc(cmds, c.commands, slices.Equal) {
				t.Errorf("commands %q, want %q", cmds, c.commands)
			}
		})
	}
}

// The profile keel writes names the pool kind's settings; the -off one
// turns autoextend off with threshold 100 (lvm.conf(5)).
func TestAutoextendProfile(t *testing.T) {
	a := spec.Autoextend{Threshold: 70, Percent: 50}
	name, content := autoextendProfile(vdoAutoextend, "vg-a/pool", a, false)
	if name != "keel-vg--a-pool-t70-p50" || !containsAll(content, "vdo_pool_autoextend_threshold = 70", "vdo_pool_autoextend_percent = 50") {
		t.Errorf("profile %s:\n%s", name, content)
	}
	name, content = autoextendProfile(thinAutoextend, "vg/tp", a, true)
	if name != "keel-vg-tp-off" || !containsAll(content, "thin_pool_autoextend_threshold = 100") {
		t.Errorf("profile %s:\n%s", name, content)
	}
	if p := autoextendProfilePath(name); p != model.LVMProfileDir+"/keel-vg-tp-off.profile" {
		t.Errorf("path %s", p)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestAutoextendFromCapture replays the captures of e2e/sizes/autoextend.sh:
// before keel ran, the t70-p50 profile is written and attached in one
// action; at 72M, where the next step (+50%, 108M) passes the maximum, the
// -off profile (threshold 100) is, and the pool is at its maximum. The
// profile written at the first capture's apply is read back unchanged.
func TestAutoextendFromCapture(t *testing.T) {
	for _, c := range []struct {
		snapshot, profile, setting string
		size                       uint64
	}{
		{"sizes-autoextend", "keel-autovg-tp-t70-p50", "thin_pool_autoextend_threshold = 70", 32 << 20},
		{"sizes-autoextend-max", "keel-autovg-tp-off", "thin_pool_autoextend_threshold = 100", 72 << 20},
	} {
		t.Run(c.snapshot, func(t *testing.T) {
			h := replayHost(t, c.snapshot)
			tp := h.ThinPools["autovg/tp"]
			if tp == nil || tp.DataSize != c.size || tp.Monitor != "monitored" {
				t.Fatalf("capture: tp %+v, want %d bytes, monitored", tp, c.size)
			}
			r := Plan(loadDesired(t, "sizes-autoextend", h), h)
			a := actionOf(r, "autoextend.policy:autovg/tp")
			if a == nil {
				t.Fatalf("no autoextend.policy action in %+v", r.Actions)
			}
			attach := [][]string{{"lvchange", "--metadataprofile", c.profile, "autovg/tp"}}
			if a.Kind != KindFile || len(a.Files) != 1 || a.Files[0].Path != autoextendProfilePath(c.profile) ||
				!strings.Contains(a.Files[0].Content, c.setting) || !slices.EqualFunc(a.Commands, attach, slices.Equal) {
				t.Errorf("action %+v, want %s written with %q, then %q", a, c.profile, c.setting, attach)
			}
		})
	}
	h := replayHost(t, "sizes-autoextend-max")
	if tp := h.ThinPools["autovg/tp"]; tp.Profile != "keel-autovg-tp-t70-p50" {
		t.Errorf("capture at 72M: profile %q, want the t70-p50 one keel attached", tp.Profile)
	}
	want, _ := autoextendProfile(thinAutoextend, "autovg/tp", spec.Autoextend{Threshold: 70, Percent: 50}, false)
	if f := h.KeelFiles[autoextendProfilePath(want)]; f == nil {
		t.Errorf("capture at 72M: no %s read", want)
	} else if _, content := autoextendProfile(thinAutoextend, "autovg/tp", spec.Autoextend{Threshold: 70, Percent: 50}, false); f.Content != content {
		t.Errorf("capture at 72M: %s is\n%s\nwant\n%s", want, f.Content, content)
	}
}

// TestAutoextendVDO replays the vdo-thick capture (vdopool: 40G, 2G slabs,
// monitored, no profile) with a VDO autoextend policy: the profile holds
// vdo_pool_autoextend_*, a step is at least one slab (a 1% step of 40G
// would be 412M, lvm2 raises it to a slab), and a pool above its declared
// size within its maximum is no vdo.size finding.
func TestAutoextendVDO(t *testing.T) {
	for _, c := range []struct {
		name, size, maximum, profile string
		findings                     []string
	}{
		{"below its maximum", "", "44G", "keel-vdolab-vdopool-t80-p1", []string{"autoextend.policy@vdolab/vdopool"}},
		{"a slab would pass it", "", "41G", "keel-vdolab-vdopool-off", []string{"autoextend.at_maximum@vdolab/vdopool", "autoextend.policy@vdolab/vdopool"}},
		{"above its declared size", "20G", "44G", "keel-vdolab-vdopool-t80-p1", []string{"autoextend.policy@vdolab/vdopool"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, r := planVDODeclared(t, "vdo-thick", "vdo-thick", "vdolab", "vdopool", func(p *spec.VDOPool) {
				p.Autoextend = &spec.Autoextend{Threshold: 80, Percent: 1, Maximum: size(t, c.maximum)}
				if c.size != "" {
					p.Size = size(t, c.size)
				}
			})
			var got []string
			for _, f := range r.Findings {
				if f.Object == "vdolab/vdopool" && (strings.HasPrefix(string(f.ID), "autoextend.") || f.ID == VDOSize) {
					got = append(got, f.Key())
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, c.findings) {
				t.Errorf("findings %q, want %q", got, c.findings)
			}
			a := actionOf(r, "autoextend.policy:vdolab/vdopool")
			want := [][]string{{"lvchange", "--metadataprofile", c.profile, "vdolab/vdopool"}}
			if a == nil || !slices.EqualFunc(a.Commands, want, slices.Equal) {
				t.Fatalf("action %+v, want %q", a, want)
			}
		})
	}
}
