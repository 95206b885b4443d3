package probes

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
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
func PoolStatusKey(ctx context.Context, src hostio.Source) (string, error) {
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
// are no pools), from the probe's own status parsers; a line they cannot
// read keys as itself, so any change of it still counts.
func poolKey(l model.DMLine) string {
	switch l.Target {
	case "thin-pool":
		st, err := model.ParseThinPoolStatus(l.Args)
		switch {
		case err != nil:
			return "thin-pool " + l.Args
		case st.Failed:
			return "thin-pool failed"
		}
		return fmt.Sprintf("thin-pool meta %d%% data %d%% ro=%t out_of_data_space=%t needs_check=%t",
			wholePercent(st.UsedMetaBlocks, st.MetaBlocks), wholePercent(st.UsedDataBlocks, st.DataBlocks),
			st.ReadOnly, st.OutOfDataSpace, st.NeedsCheck)
	case "vdo":
		st, err := model.ParseVDOStatus(l.Args)
		if err != nil {
			return "vdo " + l.Args
		}
		return fmt.Sprintf("vdo %s recovering=%t index %s compression %s used %d%%",
			st.Mode, st.InRecovery, st.IndexState, st.CompressionState, wholePercent(st.UsedBlocks, st.TotalBlocks))
	}
	return ""
}

// wholePercent is used/total in whole percent (0 when total is 0).
func wholePercent(used, total uint64) uint64 {
	if total == 0 {
		return 0
	}
	return used * 100 / total
}
