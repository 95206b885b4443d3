package schema

import (
	"slices"
	"testing"

	"github.com/keel-storage/keel/lvm/lvmregex"
	"github.com/keel-storage/keel/schema/spec"
)

// TestFilterEntries checks the generated global_filter against LVM's alias
// rule on the names udev gives a VM disk LV and a host PV.
func TestFilterEntries(t *testing.T) {
	vmDisk := []string{"/dev/dm-5", "/dev/mapper/vdovg-vm--100--disk--0", "/dev/vdovg/vm-100-disk-0",
		"/dev/disk/by-id/dm-name-vdovg-vm--100--disk--0"}
	hostPV := []string{"/dev/nvme0n1", "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0"}
	for _, c := range []struct {
		name         string
		g            *spec.GlobalFilter
		want         []string
		vmOK, hostOK bool
	}{
		{"rejects only", &spec.GlobalFilter{Reject: []string{"/dev/zd.*", "/dev/mapper/.*-(vm|base)--[0-9]+--disk--[0-9]+"}},
			[]string{"r|/dev/zd.*|", "r|/dev/mapper/.*-(vm|base)--[0-9]+--disk--[0-9]+|"}, false, true},
		{"allow-list", &spec.GlobalFilter{Reject: []string{"/dev/mapper/.*-vm--"}, Accept: []string{"^/dev/nvme", "^/dev/disk/by-id/nvme-"}},
			[]string{"r|/dev/mapper/.*-vm--|", "a|^/dev/nvme|", "a|^/dev/disk/by-id/nvme-|", "r|.*|"}, false, true},
		{"an accept on another alias wins", &spec.GlobalFilter{Reject: []string{"/dev/mapper/.*-vm--"}, Accept: []string{"^/dev/dm-", "^/dev/nvme"}},
			[]string{"r|/dev/mapper/.*-vm--|", "a|^/dev/dm-|", "a|^/dev/nvme|", "r|.*|"}, true, true},
		{"none", nil, nil, true, true},
	} {
		got := c.g.Entries()
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: entries %q, want %q", c.name, got, c.want)
			continue
		}
		if got == nil {
			continue
		}
		f, err := lvmregex.NewFilter(got)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if v := f.Decide(vmDisk); v.Accepted != c.vmOK {
			t.Errorf("%s: VM disk %+v, want accepted %v", c.name, v, c.vmOK)
		}
		if v := f.Decide(hostPV); v.Accepted != c.hostOK {
			t.Errorf("%s: host PV %+v, want accepted %v", c.name, v, c.hostOK)
		}
	}
}
