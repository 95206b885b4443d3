//go:build e2e

package sizes

import (
	"slices"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// TestGrow runs grow.sh in one boot on two small virtio disks and a loop
// device: a thin pool at half its declared size is grown, a PV whose device
// grew is pvresized and a declared PV not in the VG is vgextended, each
// shown by keel plan first. autoextend.sh runs next in the same boot, on a
// disk of its own (autoextend_test.go). Set KEEL_SIZES_SNAPSHOT_DIR=DIR to
// keep the node snapshots taken before keel acts (reconcile/plan/testdata).
func TestGrow(t *testing.T) {
	r := guest.Run(t, guest.Spec{
		Disks: []guest.Disk{
			{Kind: guest.Virtio, Size: "512M", Serial: "data1"},
			{Kind: guest.Virtio, Size: "256M", Serial: "data2"},
			autoextendDisk,
			vdosplitDisks[0], vdosplitDisks[1], vdoautoDisk,
		},
		Keel: true,
		Files: guest.ShareFiles(t, "grow.cue", "grow.sh", "autoextend.cue", "autoextend.sh",
			"vdosplit.cue", "vdosplit.sh", "vdoauto.cue", "vdoauto.sh", "../wipe/wipelib.sh"),
		// Each script in a subshell: its exit (a failed setup step's
		// included) ends it alone, and the next still runs.
		// Each script's guest time is printed for docs/testing.md.
		Script: `t0=$(date +%s)
( . "$SHARE/grow.sh" ); g=$?; t1=$(date +%s)
( . "$SHARE/autoextend.sh" ); a=$?; t2=$(date +%s)
( . "$SHARE/vdosplit.sh" ); s=$?; t3=$(date +%s)
( . "$SHARE/vdoauto.sh" ); v=$?; t4=$(date +%s)
echo "grow.sh exit $g, autoextend.sh exit $a, vdosplit.sh exit $s, vdoauto.sh exit $v"
echo "guest time: grow.sh $((t1 - t0))s, autoextend.sh $((t2 - t1))s, vdosplit.sh $((t3 - t2))s, vdoauto.sh $((t4 - t3))s"
exit $((g + a + s + v))`,
		Timeout: 20 * time.Minute,
	})
	r.LogVerdicts(t)
	r.KeepCaptures(t, "KEEL_SIZES_SNAPSHOT_DIR", "sizes", "sizes-before.txtar")
	keepAutoextendCaptures(t, r)
	r.RequireLines(t, append([]string{
		"ok: check: keel check reports thin.size, vg.pv_grown and vg.pv_not_in_vg",
		"ok: plan: keel plan shows lvextend",
		"ok: plan: keel plan shows pvresize",
		"ok: plan: keel plan shows vgextend",
		"ok: thin: tp grown to its declared 128M",
		"ok: pv: the loop PV was pvresized to its grown device",
		"ok: vg: data2 was added to sizevg",
		"ok: check: no size finding left after apply",
	}, slices.Concat(autoextendLines, vdosplitLines, vdoautoLines)...)...)
}
