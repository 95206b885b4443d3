package plan

import (
	"strconv"
	"strings"
	"testing"

	"github.com/keel-storage/keel/schema"
)

// lvmSizeOptions are LVM's size options and the unit each reads a bare
// number in (lvcreate(8), lvextend(8), lvconvert(8)).
var lvmSizeOptions = map[string]uint64{
	"-L": 1 << 20, "--size": 1 << 20, "-V": 1 << 20, "--virtualsize": 1 << 20,
	"--poolmetadatasize": 1 << 20, "--chunksize": 1 << 10,
}

// lvmReads is the number of bytes LVM reads from a size argument of opt
// (lvm2 tools/lvmcmdline.c _size_arg: units k m g t p e in either case are
// powers of 1024, s sectors, b bytes; no unit is the option's default), and
// whether the argument carried a unit.
func lvmReads(t *testing.T, opt, arg string) (uint64, bool) {
	t.Helper()
	num := strings.TrimRight(arg, "bBsSkKmMgGtTpPeE")
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		t.Fatalf("%s %s: not a whole number with a unit", opt, arg)
	}
	if num == arg {
		return n * lvmSizeOptions[opt], false
	}
	mult := map[byte]uint64{'b': 1, 's': 512, 'k': 1 << 10, 'm': 1 << 20, 'g': 1 << 30, 't': 1 << 40, 'p': 1 << 50, 'e': 1 << 60}
	return n * mult[strings.ToLower(arg[len(num):])[0]], true
}

// TestLVMSizeArguments plans every action that hands LVM a size (thin pool
// create and metadata grow, VDO create, split VDO convert) from desired
// states written in bare bytes, and checks that each size argument carries
// a unit and that LVM reads the declared number of bytes from it.
func TestLVMSizeArguments(t *testing.T) {
	const thinVG = `volumeGroups: thinvg: {
	pvs: ["/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0"]
	thinPools: {
		tp: {chunkSize: "524288", metadataSize: "268435456"}
		tpnew: {size: "2147483648", chunkSize: "65536", metadataSize: "12582912", create: true}
	}
}
`
	const vdoVG = `volumeGroups: vdodef: {
	pvs: ["/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0"]
	vdoPools: {
		vdopool: {lv: "vdolv", size: "10737418240", virtualSize: "21474836480", overcommit: true}
		pool2: {lv: "vdolv2", size: "10737418240", virtualSize: "1610612736", create: true}
	}
}
`
	const splitVG = `volumeGroups: vdosplit: {
	pvs: ["/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0", "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd1"]
	vdoPools: pool2: {
		lv: "vdolv2", size: "40G", virtualSize: "36507222016"
		split: fast: ["/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0"]
		create: true
	}
}
`
	for _, c := range []struct {
		name, snapshot, desired, action string
		want                            map[string]uint64 // option -> bytes
	}{
		{"thin create", "thin", thinVG, "thin.create:thinvg/tpnew",
			map[string]uint64{"-L": 2 << 30, "--chunksize": 64 << 10, "--poolmetadatasize": 12 << 20}},
		{"thin metadata grow", "thin", thinVG, "thin.metadata_size:thinvg/tp",
			map[string]uint64{"--poolmetadatasize": 256 << 20}},
		{"vdo create", "vdo-defaults", vdoVG, "vdo.create:vdodef/pool2",
			map[string]uint64{"-L": 10 << 30, "-V": 1536 << 20}},
		{"split vdo convert", "vdo-split", splitVG, "vdo.create:vdosplit/pool2",
			map[string]uint64{"-V": 36507222016}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := replayHost(t, c.snapshot)
			d, err := schema.NewLoader().LoadFiles([]schema.File{{Name: "sizes.cue", Data: []byte(c.desired)}})
			if err != nil {
				t.Fatal(err)
			}
			r := Plan(d.Config, h)
			var act *Action
			for i := range r.Actions {
				if r.Actions[i].ID == c.action {
					act = &r.Actions[i]
				}
			}
			if act == nil {
				t.Fatalf("no action %s in %+v", c.action, r.Actions)
			}
			seen := map[string]bool{}
			for _, argv := range act.Commands {
				for i := 0; i+1 < len(argv); i++ {
					if _, ok := lvmSizeOptions[argv[i]]; !ok {
						continue
					}
					got, unit := lvmReads(t, argv[i], argv[i+1])
					if !unit {
						t.Errorf("%s %s: no unit (%s)", argv[i], argv[i+1], strings.Join(argv, " "))
					}
					if want, ok := c.want[argv[i]]; !ok || got != want {
						t.Errorf("%s %s: LVM reads %d bytes, want %d (%s)", argv[i], argv[i+1], got, want, strings.Join(argv, " "))
					}
					seen[argv[i]] = true
				}
			}
			for opt := range c.want {
				if !seen[opt] {
					t.Errorf("no %s in %v", opt, act.Commands)
				}
			}
		})
	}
}
