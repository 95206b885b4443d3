package main

import (
	"math"
	"testing"
)

// TestMemRatios: each round's keel check is set against that round's
// fullreport into memory and keel version, and a size without frmem lines
// (raw outputs from before the row) has no ratios.
func TestMemRatios(t *testing.T) {
	sizes, _ := parseGuest(`size 2000 2002 51
probecmd 1 lvm fullreport --reportformat json
probe 1 1.00
frmem 1.10
check 1.30
start 0.10
probe 1 1.20
frmem 1.30
check 1.26
start 0.10
size 50 50 49
probecmd 1 lvm fullreport --reportformat json
probe 1 0.40
check 0.50
start 0.08
`)
	// sizes[0] holds the lines before the first size line.
	if len(sizes) != 3 || sizes[1].tag != "2000" || sizes[2].tag != "50" {
		t.Fatalf("%d sizes, want the lead-in, 2000 and 50", len(sizes))
	}
	got := sizes[1].memRatios()
	want := []float64{1.30 / 1.20, 1.26 / 1.40}
	if len(got) != len(want) {
		t.Fatalf("ratios %v, want %v", got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Errorf("round %d: %v, want %v", i, got[i], want[i])
		}
	}
	if r := sizes[2].memRatios(); len(r) != 0 {
		t.Errorf("a size without frmem: ratios %v, want none", r)
	}
}
