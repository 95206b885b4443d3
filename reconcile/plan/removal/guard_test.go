package removal

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/keel-storage/keel/lvm/units"
)

// node-guard.txtar is the capture of e2e/wipe/guard.sh after its setup
// in the guest: tvg/pool (1G, zeroing on) with the 3G thin LV
// vm-102-disk-0 (128M written) and keep; tvg/pooln (zeroing off) with
// vm-103-disk-0; gvg on the thin LV tvg/gpv of tvg/gpool with the 512M
// linear gvg/old; svg behind the storage.cfg entry "lvm: san" with
// shared 1; tvg/held, a plain LV.
var guardDecl = Declared{
	"tvg": {"vm-102-disk-0", "vm-103-disk-0", "vm-104-disk-0"},
	"gvg": {"old"},
	"svg": {"vm-200-disk-0"},
}

// tvg/vm-103-disk-0 is in tvg/pooln, created with -Z n: its removal would
// hand its chunks, bytes and all, to the next thin LV of the pool. It is
// refused with the pool, the reason and both ways forward, and nothing is
// planned; the desired state's opt-in lets it through with a note.
func TestGuardThinLVs(t *testing.T) {
	o := recorded(t, "node-guard.txtar")
	names := []string{"tvg/vm-102-disk-0", "tvg/vm-103-disk-0"}
	targets, err := Plan(o.Host, guardDecl, Request{Names: names, Mode: ModeZeroOut, RequireAbsent: true, Known: seen(guardDecl)})
	want := "lv tvg/vm-103-disk-0: refused: thin pool tvg/pooln does not zero new chunks (zeroing off), so the chunks this removal frees would give their bytes to the next thin LV of the pool; turn zeroing on: lvchange -Z y tvg/pooln, or accept it: removal: allowUnzeroedThinReuse: true"
	if !errors.Is(err, ErrRefused) || err.Error() != want || targets != nil {
		t.Fatalf("got %v, %v; want only %q", targets, err, want)
	}
	targets, err = Plan(o.Host, guardDecl, Request{Names: names, Mode: ModeZeroOut, RequireAbsent: true, AllowUnzeroedThinReuse: true, Known: seen(guardDecl)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range targets {
		if tg.Mode != ModeDiscard || !tg.NoZeroFill || tg.DiscardAfter {
			t.Errorf("%s: %+v", tg.Name(), tg)
		}
	}
	if n := strings.Join(targets[0].Notes, "\n"); !strings.Contains(n, "tvg/pool allocate every chunk of its 3G") || strings.Contains(n, "lvchange -Z y") {
		t.Errorf("vm-102 notes %q", n)
	}
	if n := strings.Join(targets[1].Notes, "\n"); !strings.Contains(n, "lvchange -Z y tvg/pooln") || !strings.Contains(n, "allowUnzeroedThinReuse is true") {
		t.Errorf("vm-103 notes %q", n)
	}
}

// What today's zero-fill of tvg/vm-102-disk-0 did in the guest (the pool
// went from 18.75 % to 100 %), the model predicts: the fill could allocate
// more than the pool has free.
func TestGuardZeroFillOfThinWouldFillPool(t *testing.T) {
	o := recorded(t, "node-guard.txtar")
	lv := o.LVs["tvg/vm-102-disk-0"]
	fill := map[string]uint64{}
	o.stack.zeroFill(o, "tvg/vm-102-disk-0", lv.Size, 0, fill)
	pool := o.stack.Pools["tvg/pool"]
	mapped := o.stack.Mapped["tvg/vm-102-disk-0"]
	// data_percent has two decimals: 4.17 % of 3G is 128M within 0.1 %.
	if mapped < 127<<20 || mapped > 129<<20 || fill["tvg/pool"] != lv.Size-mapped || !pool.Known || fill["tvg/pool"] <= pool.Free {
		t.Fatalf("fill %v, mapped %d, pool %+v", fill, mapped, pool)
	}
}

// A zero-fill of the linear gvg/old goes through the PV tvg/gpv, a thin LV
// of tvg/gpool, and could allocate all 512M there: refused, nothing planned.
func TestGuardZeroFillOverThinRefused(t *testing.T) {
	o := recorded(t, "node-guard.txtar")
	pool := o.stack.Pools["tvg/gpool"]
	if !pool.Known || pool.Free == 0 || pool.Free >= 512<<20 {
		t.Fatalf("tvg/gpool %+v", pool)
	}
	targets, err := Plan(o.Host, guardDecl, Request{Names: []string{"gvg/old"}, Mode: ModeZeroOut, RequireAbsent: true, Known: seen(guardDecl)})
	want := fmt.Sprintf("up to 512M in thin pool tvg/gpool (%s free, so it could fill the pool)", units.FormatSize(pool.Free))
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "lvremove gvg/old") || targets != nil {
		t.Fatalf("got %v, want %q", err, want)
	}
	// removal.mode discard does not get around it: gvg/old is neither thin
	// nor on VDO, so keel zeroes it anyway, which is the refused fill.
	_, err = Plan(o.Host, guardDecl, Request{Names: []string{"gvg/old"}, Mode: ModeDiscard, RequireAbsent: true, Known: seen(guardDecl)})
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("discard asked, zeroed instead: got %v", err)
	}
}

func TestGuardSharedVGRefused(t *testing.T) {
	o := recorded(t, "node-guard.txtar")
	if s := o.shared["svg"]; s.Storage != "san" {
		t.Fatalf("svg: %+v (shared: %v)", s, o.shared)
	}
	if _, ok := o.shared["tvg"]; ok {
		t.Fatal("tvg (lvmthin local-thin, no shared) counted as shared")
	}
	_, err := Plan(o.Host, guardDecl, Request{Names: AbsentNames(guardDecl), RequireAbsent: true, Known: seen(guardDecl)})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "vg svg is shared between nodes: Proxmox storage san has shared 1") ||
		!strings.Contains(err.Error(), "pvesm free san:vm-200-disk-0") {
		t.Fatalf("got %v", err)
	}
}

// No capture has a thin snapshot yet, so the origin is set on the captured
// model: when tvg/keep is a snapshot of tvg/vm-102-disk-0, a write to any
// chunk of vm-102 may copy a shared one, and the whole LV counts.
func TestZeroFillThinSnapshotSharesChunks(t *testing.T) {
	h := snapshotHost(t, "../../apply/wipe/testdata/node-guard.txtar")
	h.LVs["tvg/keep"].Origin = "vm-102-disk-0"
	o := observe(h)
	if _, ok := o.stack.Mapped["tvg/vm-102-disk-0"]; ok {
		t.Fatal("the origin's mapped bytes bound the fill")
	}
	fill := map[string]uint64{}
	o.stack.zeroFill(o, "tvg/vm-102-disk-0", 3<<30, 0, fill)
	if fill["tvg/pool"] != 3<<30 {
		t.Fatalf("fill %v, want all 3G", fill)
	}
}
