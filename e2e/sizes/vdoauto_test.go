//go:build e2e

package sizes

import "github.com/keel-storage/keel/e2e/guest"

// vdoautoDisk is the disk of vdoauto.sh, which runs in TestGrow's boot
// after vdosplit.sh: a VDO pool declared with an autoextend policy gets
// keel's LVM profile, dmeventd's vdo plugin grows it by one slab as dd
// fills it past its threshold, and keel turns autoextend off at the
// declared maximum, where it stays. Sparse: VDO writes little of it.
var vdoautoDisk = guest.Disk{Kind: guest.Virtio, Size: "6G", Serial: "vauto"}

// vdoautoLines are the lines vdoauto.sh prints when it passes.
var vdoautoLines = []string{
	"ok: apply: profile keel-avg-vpool-t70-p1 written and attached",
	"ok: apply: dmeventd monitors vpool",
	"ok: grow: dmeventd grew vpool past 70% from 4G to 4228M",
	"ok: ceiling: keel attached keel-avg-vpool-off at 4228M",
	"ok: ceiling: keel check reports autoextend.at_maximum",
	"ok: ceiling: vpool stayed at its maximum 4228M",
}
