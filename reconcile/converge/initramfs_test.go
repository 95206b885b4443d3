package converge

import (
	"testing"

	"github.com/keel-storage/keel/reconcile/apply/executor"
	"github.com/keel-storage/keel/reconcile/plan"
)

// TestInitramfsNotice: the plan's lvm.initramfs_stale survives into the
// pass's findings only when the lvm.conf write converged; the fresh plan
// after the write no longer raises it, yet the initramfs still holds the
// older lvm.conf.
func TestInitramfsNotice(t *testing.T) {
	planned := []plan.Finding{
		{ID: plan.LVMGlobalFilter, Object: plan.LVMConfObject},
		{ID: plan.LVMInitramfsStale, Object: plan.LVMConfObject, Remedy: "update-initramfs -u"},
	}
	lvmconf := plan.Action{ID: "lvm.conf:lvm.conf", Kind: plan.KindLVMConf}
	for _, c := range []struct {
		name   string
		status executor.Status
		want   int
	}{
		{"converged", executor.Converged, 1},
		{"failed", executor.Failed, 0},
		{"refused", executor.Refused, 0},
	} {
		rep := executor.Report{Results: []executor.Result{{Action: lvmconf, Status: c.status}}}
		got := initramfsNotice(planned, rep)
		if len(got) != c.want || c.want == 1 && got[0].ID != plan.LVMInitramfsStale {
			t.Errorf("%s: %+v, want %d lvm.initramfs_stale", c.name, got, c.want)
		}
	}
}
