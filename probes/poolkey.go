package probes

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// PoolStatusKey reads `dmsetup status` (in-process where the runner serves
// it by ioctl) and sums up what the planner's fill, mode and health
// findings read from the kernel's pools, coarsely enough that a quiet host
// gives the same key tick after tick: for each thin pool its data and
// metadata use in whole percent and its mode words (ro, out_of_data_space,
// needs_check, Fail; the kernel's Documentation/admin-guide/device-mapper/
// thin-provisioning.rst), for each VDO volume its operating mode, recovery,
// index and compression states and its use in whole percent (vdo.rst).
// The daemon runs a full pass when the key changes: thin-pool fill and VDO
// modes change in the kernel alone, with no uevent and no LVM commit.
func PoolStatusKey(ctx context.Context, src Source) (string, error) {
	out, err := run(ctx, src, dmStatusCmd)
	if err != nil {
		return "", err
	}
	m, err := parseDMLines("dmsetup status", out)
	if err != nil {
		return "", err
	}
	var keys []string
	for name, lines := range m {
		for _, l := range lines {
			if k := poolKey(l); k != "" {
				keys = append(keys, name+" "+k)
			}
		}
	}
	sort.Strings(keys)
	return strings.Join(keys, "\n"), nil
}

// poolKey is one status line's part of PoolStatusKey ("" for targets that
// are no pools).
func poolKey(l DMLine) string {
	f := strings.Fields(l.Args)
	switch l.Target {
	case "thin-pool":
		// <transaction id> <used meta>/<total meta> <used data>/<total data>
		// <held root> ro|rw|out_of_data_space [no_]discard_passdown
		// error|queue_if_no_space needs_check|- <meta low water>; "Fail"
		// alone when the pool failed.
		if len(f) < 4 {
			return "thin-pool " + strings.Join(f, " ")
		}
		return fmt.Sprintf("thin-pool meta %s data %s %s", percentOf(f[1]), percentOf(f[2]), strings.Join(f[min(4, len(f)):], " "))
	case "vdo":
		// <device> <operating mode> <in recovery> <index state>
		// <compression state> <physical blocks used> <total physical blocks>
		if len(f) < 7 {
			return "vdo " + strings.Join(f, " ")
		}
		return fmt.Sprintf("vdo %s used %s", strings.Join(f[1:5], " "), percentOf(f[5]+"/"+f[6]))
	}
	return ""
}

// percentOf turns "used/total" into whole percent, or returns it as it is
// when it is not two numbers.
func percentOf(ratio string) string {
	a, b, ok := strings.Cut(ratio, "/")
	used, err1 := strconv.ParseUint(a, 10, 64)
	total, err2 := strconv.ParseUint(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || total == 0 {
		return ratio
	}
	return strconv.FormatUint(used*100/total, 10) + "%"
}
