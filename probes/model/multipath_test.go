package model

import "testing"

func TestIsPartitionOf(t *testing.T) {
	for _, c := range []struct {
		part, disk string
		want       bool
	}{
		{"sdb1", "sdb", true},
		{"sdb12", "sdb", true},
		{"sdb", "sdb", false},
		{"sdbc", "sdb", false},
		{"sdb1", "sd", false},
		{"nvme0n1p1", "nvme0n1", true},
		{"nvme0n12", "nvme0n1", false},
		{"nvme0n1p", "nvme0n1", false},
	} {
		if got := isPartitionOf(c.part, c.disk); got != c.want {
			t.Errorf("isPartitionOf(%q, %q) = %v, want %v", c.part, c.disk, got, c.want)
		}
	}
}
