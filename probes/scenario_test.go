package probes

import (
	"testing"

	"github.com/keel-storage/keel/probes/model"
)

// Facts of the capture scenarios (e2e/scenarios/stacks.sh), checked on the
// snapshots `make fixtures` recorded in the test guest.

// journalPV returns the PV holding the end of the pool's recovery journal
// and whether the whole journal is on fast PVs.
func journalPV(t *testing.T, h *model.Host, pool string) (string, bool) {
	t.Helper()
	p := h.VDOPools[pool]
	if p == nil || p.OnDisk == nil || p.Computed == nil {
		t.Fatalf("vdo pool %s not fully probed: %+v", pool, p)
	}
	if p.OnDisk.Journal != p.Computed.Journal || p.OnDisk.Summary != p.Computed.Summary {
		t.Errorf("%s: on-disk journal %v summary %v, computed %v %v", pool, p.OnDisk.Journal, p.OnDisk.Summary, p.Computed.Journal, p.Computed.Summary)
	}
	if p.OnDisk.Summary.Last != p.Table.PhysicalBlocks-1 {
		t.Errorf("%s: summary ends at %d of %d blocks", pool, p.OnDisk.Summary.Last, p.Table.PhysicalBlocks)
	}
	for _, r := range p.Regions {
		if r.Name == "recovery journal" && len(r.On) > 0 {
			return r.On[len(r.On)-1].PV, r.Fast
		}
	}
	t.Fatalf("%s: no placed recovery journal in %+v", pool, p.Regions)
	return "", false
}

func TestSplitPoolJournalFollowsGrowth(t *testing.T) {
	for _, tc := range []struct {
		snap string
		pv   string
		fast bool
	}{
		{"vdo-split", "/dev/nvme0n1", true},         // fast tail
		{"vdo-split-grown", "/dev/sd", false},       // grown onto the HDD: the journal moved there
		{"vdo-split-regrown", "/dev/nvme0n1", true}, // grown again by a slab on the NVMe
		{"vdo-on-bcache", "/dev/nvme0n1", true},
	} {
		t.Run(tc.snap, func(t *testing.T) {
			h := probeSnapshot(t, tc.snap)
			pv, fast := journalPV(t, h, "vdosplit/pool")
			if fast != tc.fast || pv[:len(tc.pv)] != tc.pv {
				t.Errorf("journal on %s (fast %v), want %s* (fast %v)", pv, fast, tc.pv, tc.fast)
			}
			p := h.VDOPools["vdosplit/pool"]
			for _, r := range p.Regions {
				if r.Name == "index" && (!r.Fast || r.On[0].PV != "/dev/nvme0n1" || r.On[0].FirstPE != 0) {
					t.Errorf("index on %+v", r.On)
				}
			}
		})
	}
}

func TestVDOThreadLayouts(t *testing.T) {
	type threads struct{ ack, bio, cpu, hash, logical, physical int }
	for _, tc := range []struct {
		snap, pool string
		want       threads
		maxDiscard uint64
		scanLVs    string
	}{
		{"vdo-thick", "vdolab/vdopool", threads{1, 2, 3, 2, 4, 4}, 4096, "1"}, // the article's layout
		{"vdo-defaults", "vdodef/vdopool", threads{1, 4, 2, 1, 1, 1}, 1, "0"}, // LVM's defaults
	} {
		t.Run(tc.snap, func(t *testing.T) {
			h := probeSnapshot(t, tc.snap)
			p := h.VDOPools[tc.pool]
			if p == nil || p.Table == nil {
				t.Fatalf("pool %s: %+v", tc.pool, p)
			}
			got := threads{p.Table.Ack, p.Table.Bio, p.Table.CPU, p.Table.Hash, p.Table.Logical, p.Table.Physical}
			if got != tc.want || p.Table.MaxDiscard != tc.maxDiscard {
				t.Errorf("threads %+v maxDiscard %d, want %+v %d", got, p.Table.MaxDiscard, tc.want, tc.maxDiscard)
			}
			if p.Settings["vdo_max_discard"] != p.Table.Options["maxDiscard"] || p.Settings["vdo_cpu_threads"] != p.Table.Options["cpu"] {
				t.Errorf("LVM settings %v disagree with the table %v", p.Settings, p.Table.Options)
			}
			if h.LVMConfig.Values["devices/scan_lvs"] != tc.scanLVs {
				t.Errorf("scan_lvs = %q", h.LVMConfig.Values["devices/scan_lvs"])
			}
			if p.Stats == nil || p.Stats.PhysicalBlocks != p.Table.PhysicalBlocks || p.Status.Mode != "normal" {
				t.Errorf("stats %+v status %+v", p.Stats, p.Status)
			}
		})
	}
}

// TestStackedVG: the article's VG on the VDO LV, and the Proxmox storage on it.
func TestStackedVG(t *testing.T) {
	for _, snap := range []string{"vdo-thick", "pve"} {
		h := probeSnapshot(t, snap)
		pv := h.PVs["/dev/vdolab/vdolv"]
		if pv == nil || pv.VG != "vdovg" {
			t.Fatalf("%s: pv on the vdo lv = %+v", snap, pv)
		}
		q := h.Queues[pv.Device]
		if q == nil || q.DMName != h.LVs["vdolab/vdolv"].DMName {
			t.Errorf("%s: pv device %s queue %+v is not the vdo lv", snap, pv.Device, q)
		}
	}
	p := probeSnapshot(t, "pve").Proxmox
	if p == nil {
		t.Fatal("pve: no storage.cfg")
	}
	var found bool
	for _, s := range p.Storages {
		if s.Type == "lvm" && s.ID == "vdostore" {
			found = s.VG == "vdovg" && !s.Saferemove && s.Options["content"] == "images,rootdir"
		}
	}
	if !found || len(p.Storages) != 2 {
		t.Errorf("storages = %+v", p.Storages)
	}
	if probeSnapshot(t, "vdo-thick").Proxmox != nil {
		t.Error("vdo-thick: storage.cfg reported where there is none")
	}
}

func TestThinPools(t *testing.T) {
	h := probeSnapshot(t, "thin")
	for _, tc := range []struct {
		pool     string
		chunk    uint64
		zero     bool
		metadata uint64
		thins    int
	}{
		{"thinvg/tp", 512 << 10, false, 128 << 20, 1},
		{"thinvg/tpbad", 8 << 20, true, 4 << 20, 0},
	} {
		tp := h.ThinPools[tc.pool]
		if tp == nil || tp.Status == nil {
			t.Fatalf("%s: %+v", tc.pool, tp)
		}
		if tp.ChunkSize != tc.chunk || tp.Zero != tc.zero || tp.MetadataSize != tc.metadata || len(tp.ThinLVs) != tc.thins {
			t.Errorf("%s = %+v", tc.pool, tp)
		}
		st := tp.Status
		if st.DataBlocks*tp.ChunkSize != tp.DataSize || st.MetaBlocks*4096 != tp.MetadataSize || st.ReadOnly || st.NeedsCheck || st.OutOfDataSpace {
			t.Errorf("%s status = %+v", tc.pool, st)
		}
		if got := 100 * float64(st.UsedDataBlocks) / float64(st.DataBlocks); got-tp.DataPercent > 0.01 || tp.DataPercent-got > 0.01 {
			t.Errorf("%s: data %.2f%% from status, %.2f%% from LVM", tc.pool, got, tp.DataPercent)
		}
	}
}

func TestBcacheTunables(t *testing.T) {
	for _, tc := range []struct {
		snap             string
		percent          int
		cutoff           uint64
		congestedR, conW uint64
	}{
		{"bcache", 40, 0, 0, 0},
		{"bcache-defaults", 10, 4 << 20, 2000, 20000},
	} {
		h := probeSnapshot(t, tc.snap)
		if len(h.Bcache) != 1 {
			t.Fatalf("%s: %d bcache devices", tc.snap, len(h.Bcache))
		}
		for _, b := range h.Bcache {
			cs := h.CacheSets[b.CacheSet]
			if cs == nil {
				t.Fatalf("%s: cache set %q missing", tc.snap, b.CacheSet)
			}
			if b.WritebackPercent != tc.percent || b.SequentialCutoff != tc.cutoff || cs.CongestedReadThresholdUS != tc.congestedR || cs.CongestedWriteThresholdUS != tc.conW {
				t.Errorf("%s: bcache %+v, set %+v", tc.snap, b, cs)
			}
			if b.CacheMode != "writeback" || !b.Running || len(cs.CacheDevices) != 1 {
				t.Errorf("%s: mode %q running %v cache devices %v", tc.snap, b.CacheMode, b.Running, cs.CacheDevices)
			}
		}
	}
}

func TestEmptyHost(t *testing.T) {
	h := probeSnapshot(t, "empty")
	if len(h.PVs)+len(h.VGs)+len(h.LVs)+len(h.DM)+len(h.Bcache) != 0 {
		t.Errorf("empty host: %d PVs %d VGs %d LVs %d dm %d bcache", len(h.PVs), len(h.VGs), len(h.LVs), len(h.DM), len(h.Bcache))
	}
	for _, dev := range []string{"nvme0n1"} {
		q := h.Queues[dev]
		if q == nil || q.Rotational != 0 || q.Transport != "nvme" || q.DiscardMaxHWBytes == 0 || q.Size != 64<<30 {
			t.Errorf("queue %s = %+v", dev, q)
		}
	}
	var rot int
	for _, q := range h.Queues {
		if q.Transport == "scsi" && q.Rotational == 1 {
			rot++
		}
	}
	if rot != 1 {
		t.Errorf("%d rotational SCSI disks, want the one HDD", rot)
	}
}
