package probes

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
)

// vgSeqnoCmd reports every VG's metadata sequence number and nothing else.
var vgSeqnoCmd = Cmd{Name: "lvm", Args: []string{"vgs", "--reportformat", "json", "-o", "vg_name,vg_seqno"}}

// VGSeqnos returns the vg_seqno of every VG LVM reports now, by VG name.
// LVM adds one to a VG's seqno at every commit of its metadata (lvm2
// lib/metadata/metadata.c, vg_commit), so two readings that agree for every
// VG bracket a time in which no VG was committed; the daemon uses that to
// trust the PV stamps it read between a pass's report and this call.
func VGSeqnos(ctx context.Context, src Source) (map[string]uint64, error) {
	out, err := run(ctx, src, vgSeqnoCmd)
	if err != nil {
		return nil, err
	}
	var rep struct {
		Report []struct {
			VG []map[string]string `json:"vg"`
		} `json:"report"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return nil, fmt.Errorf("lvm vgs: %w", err)
	}
	m := map[string]uint64{}
	for _, el := range rep.Report {
		for _, r := range el.VG {
			n, err := strconv.ParseUint(r["vg_seqno"], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("lvm vgs: vg %s: field vg_seqno: %w", r["vg_name"], err)
			}
			m[r["vg_name"]] = n
		}
	}
	return m, nil
}
