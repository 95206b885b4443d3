package lvmconf

import (
	"testing"

	"github.com/keel-storage/keel/reconcile/plan"
)

// BenchmarkEditStock asserts all three settings in trixie's stock lvm.conf
// (2514 lines): what keel does on every pass that finds lvm.conf reset.
func BenchmarkEditStock(b *testing.B) {
	src := stock(b)
	ch := plan.LVMConfChange{ScanLVs: ptr(true), UseDevicesFile: ptr(false),
		GlobalFilter: []string{"r|^/dev/zd.*|", "r|^/dev/bcache[0-9]+$|", "a|.*|"}}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Edit(src, ch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadStock reads the managed settings of the stock file (no
// change needed): the cost of a pass where lvm.conf is already right.
func BenchmarkReadStock(b *testing.B) {
	src := stock(b)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Read(src); err != nil {
			b.Fatal(err)
		}
	}
}
