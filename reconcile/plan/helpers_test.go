package plan

import (
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
