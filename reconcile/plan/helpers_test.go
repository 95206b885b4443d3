package plan

import (
	"maps"
	"slices"
	"testing"

	"github.com/keel-storage/keel/probes/model"
)

func TestParseLVMList(t *testing.T) {
	got := parseLVMList(`["r|^/dev/bcache[0-9]+$|","r|^/dev/zram.*|","a|.*|"]`)
	want := []string{"r|^/dev/bcache[0-9]+$|", "r|^/dev/zram.*|", "a|.*|"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q", got)
	}
	if got := parseLVMList(`["a|\"x\"|"]`); !slices.Equal(got, []string{`a|"x"|`}) {
		t.Errorf("escaped quote: %q", got)
	}
	if got := parseLVMList(""); got != nil {
		t.Errorf("empty: %q", got)
	}
}

func TestMergeRanges(t *testing.T) {
	got := mergeRanges([]model.PVRange{{PV: "/dev/sdb", FirstPE: 3299, LastPE: 3330}, {PV: "/dev/sdb", FirstPE: 3331, LastPE: 3331},
		{PV: "/dev/sda", FirstPE: 5, LastPE: 6}, {PV: "/dev/sdb", FirstPE: 3400, LastPE: 3401}})
	want := []model.PVRange{{PV: "/dev/sda", FirstPE: 5, LastPE: 6}, {PV: "/dev/sdb", FirstPE: 3299, LastPE: 3331}, {PV: "/dev/sdb", FirstPE: 3400, LastPE: 3401}}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v", got)
	}
}

func TestIndexCodeMiB(t *testing.T) {
	for code, want := range map[uint32]uint64{0xFFFFFF00: 256, 0xFFFFFE00: 512, 0xFFFFFD00: 768, 2: 2048, 0x1234: 0} {
		if got := indexCodeMiB(code); got != want {
			t.Errorf("indexCodeMiB(%#x) = %d, want %d", code, got, want)
		}
	}
}

// TestLVKeysByVG: the LV keys taken from the VGs' sorted lists are the
// keys sorted, for the captured hosts and for VG names whose order
// differs from their keys' ("a" and "a-b": "a-b/…" sorts first); lists
// that are not the host's LVs, or not sorted, give nil.
func TestLVKeysByVG(t *testing.T) {
	hosts := map[string]*model.Host{}
	for _, c := range ScaleCases() {
		_, hosts[c.Name] = ReplayScale(t, c.Name)
	}
	tricky := &model.Host{VGs: map[string]*model.VG{}, LVs: map[string]*model.LV{}}
	for _, vg := range []string{"a", "a-b", "a.b", "a+b", "a_b", "ab", "A", "a0"} {
		v := &model.VG{Name: vg}
		for _, lv := range []string{"-x", "lv", "lv0", "lv_1", "vm-100-disk-0", "Z"} {
			tricky.LVs[vg+"/"+lv] = &model.LV{VG: vg, Name: lv}
			v.LVs = append(v.LVs, vg+"/"+lv)
		}
		slices.Sort(v.LVs)
		tricky.VGs[vg] = v
	}
	hosts["tricky"] = tricky
	for name, h := range hosts {
		got := lvKeysByVG(h)
		if want := slices.Sorted(maps.Keys(h.LVs)); !slices.Equal(got, want) {
			t.Errorf("%s: lvKeysByVG gives %d keys, not the %d sorted ones", name, len(got), len(want))
		}
	}
	spoil := map[string]func(h *model.Host){
		"an LV in no list":     func(h *model.Host) { h.LVs["a/extra"] = &model.LV{VG: "a", Name: "extra"} },
		"a listed key unknown": func(h *model.Host) { h.VGs["a"].LVs[0] = "a/-w" },
		"a list not sorted":    func(h *model.Host) { l := h.VGs["ab"].LVs; l[0], l[1] = l[1], l[0] },
		"a key of another VG":  func(h *model.Host) { h.VGs["a"].LVs[0] = "a-b/-x" },
		"a key listed twice":   func(h *model.Host) { h.VGs["a"].LVs[1] = h.VGs["a"].LVs[0] },
	}
	for what, f := range spoil {
		h := &model.Host{VGs: map[string]*model.VG{}, LVs: maps.Clone(tricky.LVs)}
		for k, v := range tricky.VGs {
			c := *v
			c.LVs = slices.Clone(v.LVs)
			h.VGs[k] = &c
		}
		f(h)
		if got := lvKeysByVG(h); got != nil {
			t.Errorf("%s: lvKeysByVG gives %d keys, want nil", what, len(got))
		}
	}
}
