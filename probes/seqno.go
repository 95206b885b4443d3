package probes

import (
	"context"
	"fmt"
	"strconv"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/internal/lvmjson"
)

// vgSeqnoCmd reports every VG's metadata sequence number and nothing else.
var vgSeqnoCmd = hostio.Cmd{Name: "lvm", Args: []string{"vgs", "--reportformat", "json", "-o", "vg_name,vg_seqno"}, ReadOnly: true}

// VGSeqnos returns the vg_seqno of every VG LVM reports now, by VG name.
// LVM adds one to a VG's seqno each time it writes the VG's metadata
// (vg_write in lvm2's lib/metadata/metadata.c, before the precommit and
// commit), so two readings that agree for every VG bracket a time in which
// no VG was committed; the daemon uses that to trust the PV stamps it read
// between a pass's report and this call. The JSON is read by the decoder
// of the full report (lvmjson.DecodeRows).
func VGSeqnos(ctx context.Context, src hostio.Source) (map[string]uint64, error) {
	out, err := run(ctx, src, vgSeqnoCmd)
	if err != nil {
		return nil, err
	}
	rep, err := lvmjson.DecodeRows(out, func(sub string) bool { return sub == "vg" }, false)
	if err != nil {
		return nil, fmt.Errorf("lvm vgs: %w", err)
	}
	m := map[string]uint64{}
	for _, el := range rep.Report {
		for _, r := range el["vg"] {
			name := r.Get("vg_name")
			n, err := strconv.ParseUint(r.Get("vg_seqno"), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("lvm vgs: vg %s: field vg_seqno: %w", name, err)
			}
			m[name] = n
		}
	}
	return m, nil
}
