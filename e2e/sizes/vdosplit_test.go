//go:build e2e

package sizes

import "github.com/keel-storage/keel/e2e/guest"

// vdosplitDisks are the disks of vdosplit.sh, which runs in TestGrow's
// boot after autoextend.sh: a split VDO pool keel created at 4G, declared
// 5G, is grown by keel apply in the steps keel recommend --grow computes,
// and its recovery journal is still on the NVMe afterwards. Sparse: VDO
// writes little of them.
var vdosplitDisks = []guest.Disk{
	{Kind: guest.NVMe, Size: "4G", Serial: "sfast"},
	{Kind: guest.HDD, Size: "8G", Serial: "sslow"},
}

// vdosplitLines are the lines vdosplit.sh prints when it passes.
var vdosplitLines = []string{
	"ok: split: the new pool's recovery journal is on the NVMe",
	"ok: plan: keel plan grows spool on the HDD first and ends on the NVMe",
	"ok: grow: keel apply grew spool to its declared 5G",
	"ok: grow: the recovery journal is still on the NVMe",
	"ok: check: no vdo.size or vdo.layout finding after apply",
}
