package plan

import (
	"fmt"
	"maps"
	"slices"

	"github.com/keel-storage/keel/lvm/units"
	"github.com/keel-storage/keel/probes/model"
)

// A thin pool whose data LV is a VDO LV (lvm2 2.03.24, lvcreate --type
// thin-pool --pooldatavdo y; model.ThinPool.DataVDO) is one object to LVM:
// its VDO pool (pool_vpool0, captured in the test guest as thin-vdodata) is
// created, grown and removed with the thin pool, and keel cannot declare it
// apart. Its VDO findings are judged with the thin pool, by the reference
// rules (auditVDO), whatever the desired state says of the thin pool, and
// marked undeclared only when the thin pool is. thin.on_vdo is not raised
// for it: that finding condemns a VG stacked on a VDO LV, where LVM sees
// two unrelated layers (checkThinOnVDO).

// thinOfDataVDO maps the key of each VDO pool that is a thin pool's data
// to that thin pool.
func (p *planner) thinOfDataVDO() map[string]*model.ThinPool {
	out := map[string]*model.ThinPool{}
	for _, key := range slices.Sorted(maps.Keys(p.h.ThinPools)) {
		if tp := p.h.ThinPools[key]; tp.DataVDO != "" {
			out[tp.DataVDO] = tp
		}
	}
	return out
}

// planDataVDO judges the VDO pool under each declared thin pool's data by
// the reference rules (the undeclared ones are auditUndeclared's).
func (p *planner) planDataVDO() {
	for _, key := range slices.Sorted(maps.Keys(p.h.ThinPools)) {
		tp := p.h.ThinPools[key]
		if _, declared := p.d.VolumeGroups[tp.VG].ThinPools[tp.Name]; !declared || tp.DataVDO == "" {
			continue
		}
		if pool := p.h.VDOPools[tp.DataVDO]; pool != nil {
			was := p.audit
			p.audit = true // the reference rules and no action, as in Audit
			p.auditVDO(pool)
			p.audit = was
		}
	}
}

// dataVDORemedy is vdo.overcommit's remedy on the VDO LV under a thin
// pool's data: that LV is the pool's data and is not reduced by itself,
// and LVM reduces no thin pool, so the way forward is to keep the pool's
// data below what VDO holds thick: keel's alert on it (dataPercentAlert).
func dataVDORemedy(tp *model.ThinPool, limit uint64) string {
	pct := uint64(0)
	if tp.DataSize > 0 {
		pct = limit * 100 / tp.DataSize
	}
	return fmt.Sprintf("the VDO LV is thin pool %s's data (--pooldatavdo), which LVM does not reduce: keep the pool's data under %s, e.g. declare volumeGroups: %s: thinPools: %s: dataPercentAlert: %d so that keel alerts before VDO fills",
		tp.LV, units.FormatSize(limit), tp.VG, tp.Name, max(pct, 1))
}

// passdownOff is what vdo.max_discard adds on the VDO pool under a thin
// pool's data when dm-thin has turned discard passdown off: dm-thin does
// so when the data device cannot take a discard of a whole chunk
// (drivers/md/dm-thin.c, disable_discard_passdown_if_not_supported), which
// the thin-vdodata capture shows with LVM's max_discard of 4 KiB under a
// 512 KiB chunk: the guests' discards then never reach VDO, and it keeps
// every block they free.
func (p *planner) passdownOff(pool *model.VDOPool) string {
	tp := p.thinOfDataVDO()[pool.LV]
	if tp == nil || tp.Status == nil || tp.Status.Discards != "no_discard_passdown" {
		return ""
	}
	return fmt.Sprintf("; dm-thin turned discard passdown off for thin pool %s (chunk %s above it), so the guests' discards never reach VDO", tp.LV, units.FormatSize(tp.ChunkSize))
}

// framedDataVDOSettings is framedVDOSettings for the VDO pool under a thin
// pool's data: LVM refuses to deactivate the data LV itself (a hidden
// sub-LV), so the thin pool's active thin LVs and then the thin pool go
// down, the settings change on the VDO pool, and exactly the thin LVs that
// were active come back (each brings the pool up), or the pool alone when
// none was. Run in the test guest with lvm2 2.03.31 on the thin-vdodata
// stack (testdata/snapshots/thin-vdodata-commands.log): lvchange -an on
// pool_tdata fails ("used by another device"), this sequence succeeds and
// max_discard=128 (the 512K chunk) brings discard passdown back.
func (p *planner) framedDataVDOSettings(tp *model.ThinPool, pool, settings string) [][]string {
	var active []string
	for _, key := range tp.ThinLVs {
		if lv := p.h.LVs[key]; lv != nil && lv.Active {
			active = append(active, key)
		}
	}
	var cmds [][]string
	if len(active) > 0 {
		cmds = append(cmds, append([]string{"lvchange", "-an"}, active...))
	}
	cmds = append(cmds, []string{"lvchange", "-an", tp.LV}, []string{"lvchange", "--vdosettings", settings, pool})
	if len(active) == 0 {
		return append(cmds, []string{"lvchange", "-ay", tp.LV})
	}
	return append(cmds, append([]string{"lvchange", "-ay"}, active...))
}
