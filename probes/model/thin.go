package model

import (
	"fmt"
	"strconv"
	"strings"
)

// ThinPool is an LVM thin pool with its live dm-thin status.
type ThinPool struct {
	VG           string   `json:"vg"`
	Name         string   `json:"name"`
	LV           string   `json:"lv"`           // "vg/pool"
	ThinLVs      []string `json:"thinLVs"`      // "vg/lv" of its thin volumes
	DMName       string   `json:"dmName"`       // dm name of the thin-pool target
	ChunkSize    uint64   `json:"chunkSize"`    // chunk_size, bytes
	Zero         bool     `json:"zero"`         // zero: new blocks are zeroed
	Discards     string   `json:"discards"`     // discards: passdown, nopassdown, ignore
	DataSize     uint64   `json:"dataSize"`     // lv_size
	MetadataSize uint64   `json:"metadataSize"` // lv_metadata_size
	// DataVDO is the VDO pool ("vg/pool_vpool", a key of Host.VDOPools)
	// under the pool's data LV when that LV is a VDO LV: the layout lvm2
	// 2.03.24 creates with lvcreate --type thin-pool --pooldatavdo y
	// (pool_tdata of segtype vdo on the hidden vdo-pool pool_vpool; lvm2's
	// test/shell/lvcreate-thin-vdo.sh). "" for a pool on plain extents.
	DataVDO string `json:"dataVDO,omitempty"`
	// DataPercent and MetadataPercent are LVM's figures, -1 when unknown.
	DataPercent     float64         `json:"dataPercent"`
	MetadataPercent float64         `json:"metadataPercent"`
	Status          *ThinPoolStatus `json:"status"` // nil when inactive
	// Monitor is the pool segment's seg_monitor: "monitored", "not
	// monitored", "pending", "failed", or "" (inactive, or not reported).
	Monitor string `json:"monitor,omitempty"`
	// Profile is the metadata profile attached to the pool (lv_profile).
	Profile string   `json:"profile,omitempty"`
	Errors  []string `json:"errors"`
}

// ThinPoolStatus is a parsed dm-thin pool status line.
type ThinPoolStatus struct {
	Failed         bool   `json:"failed"` // status was "Fail" or "Error"
	TransactionID  uint64 `json:"transactionID"`
	UsedMetaBlocks uint64 `json:"usedMetaBlocks"` // 4 KiB metadata blocks
	MetaBlocks     uint64 `json:"metaBlocks"`
	UsedDataBlocks uint64 `json:"usedDataBlocks"` // pool blocks (chunks)
	DataBlocks     uint64 `json:"dataBlocks"`
	ReadOnly       bool   `json:"readOnly"`       // "ro"
	OutOfDataSpace bool   `json:"outOfDataSpace"` // "out_of_data_space"
	Discards       string `json:"discards"`
	ErrorIfNoSpace bool   `json:"errorIfNoSpace"`
	NeedsCheck     bool   `json:"needsCheck"`
}

// ParseThinPoolStatus parses the arguments of a thin-pool status line.
func ParseThinPoolStatus(args string) (*ThinPoolStatus, error) {
	f := strings.Fields(args)
	if len(f) == 1 && (f[0] == "Fail" || f[0] == "Error") {
		return &ThinPoolStatus{Failed: true}, nil
	}
	if len(f) < 8 {
		return nil, fmt.Errorf("dmsetup status: thin-pool: %d fields, want at least 8", len(f))
	}
	s := &ThinPoolStatus{}
	var err error
	if s.TransactionID, err = strconv.ParseUint(f[0], 10, 64); err != nil {
		return nil, fmt.Errorf("dmsetup status: thin-pool: field transaction id: %w", err)
	}
	pair := func(field, v string) (uint64, uint64, error) {
		a, b, ok := strings.Cut(v, "/")
		if !ok {
			return 0, 0, fmt.Errorf("dmsetup status: thin-pool: field %s: %q is not used/total", field, v)
		}
		x, err1 := strconv.ParseUint(a, 10, 64)
		y, err2 := strconv.ParseUint(b, 10, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, fmt.Errorf("dmsetup status: thin-pool: field %s: %q is not used/total", field, v)
		}
		return x, y, nil
	}
	if s.UsedMetaBlocks, s.MetaBlocks, err = pair("metadata", f[1]); err != nil {
		return nil, err
	}
	if s.UsedDataBlocks, s.DataBlocks, err = pair("data", f[2]); err != nil {
		return nil, err
	}
	switch f[4] {
	case "ro":
		s.ReadOnly = true
	case "out_of_data_space":
		s.OutOfDataSpace = true
	case "rw":
	default:
		return nil, fmt.Errorf("dmsetup status: thin-pool: field mode: unknown %q", f[4])
	}
	s.Discards = f[5]
	s.ErrorIfNoSpace = f[6] == "error_if_no_space"
	s.NeedsCheck = f[7] == "needs_check"
	return s, nil
}
