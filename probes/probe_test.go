package probes

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
)

// The snapshots in testdata/snapshots were recorded with `keel snapshot` in
// the qemu test guest (e2e/capture-fixtures.sh, e2e/probes/capture.sh).

func snapshotFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/snapshots/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no snapshots in testdata/snapshots (err %v)", err)
	}
	return files
}

func loadSnapshot(t testing.TB, name string) *hostio.Snapshot {
	t.Helper()
	s, err := hostio.ReadSnapshotFile(filepath.Join("testdata/snapshots", name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func probeSnapshot(t testing.TB, name string) *model.Host {
	t.Helper()
	h, err := Probe(context.Background(), hostio.Replay(loadSnapshot(t, name)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return h
}

// allErrors collects every Errors list of the model.
func allErrors(h *model.Host) []string {
	errs := append(append([]string{}, h.Errors...), h.LVMConfig.Errors...)
	errs = append(errs, errorsOf(h.PVs, func(x *model.PV) []string { return x.Errors })...)
	errs = append(errs, errorsOf(h.VGs, func(x *model.VG) []string { return x.Errors })...)
	errs = append(errs, errorsOf(h.LVs, func(x *model.LV) []string { return x.Errors })...)
	errs = append(errs, errorsOf(h.VDOPools, func(x *model.VDOPool) []string { return x.Errors })...)
	errs = append(errs, errorsOf(h.ThinPools, func(x *model.ThinPool) []string { return x.Errors })...)
	errs = append(errs, errorsOf(h.Bcache, func(x *model.Bcache) []string { return x.Errors })...)
	errs = append(errs, errorsOf(h.CacheSets, func(x *model.CacheSet) []string { return x.Errors })...)
	if h.Proxmox != nil {
		errs = append(errs, h.Proxmox.Errors...)
	}
	return errs
}

func errorsOf[T any](m map[string]T, get func(T) []string) []string {
	var out []string
	for _, k := range sortedKeys(m) {
		out = append(out, get(m[k])...)
	}
	return out
}

// TestReplayAllSnapshots checks that every recorded pass replays through the
// same probe code without touching anything unrecorded, parses without
// errors, and records again to the same bytes.
func TestReplayAllSnapshots(t *testing.T) {
	for _, f := range snapshotFiles(t) {
		name := strings.TrimSuffix(filepath.Base(f), ".txtar")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			snap, err := hostio.ParseSnapshot(raw)
			if err != nil {
				t.Fatal(err)
			}
			rec := hostio.NewRecorder(hostio.Replay(snap))
			h, err := Probe(context.Background(), rec.Source())
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range allErrors(h) {
				t.Errorf("probe error: %s", e)
			}
			if h.Kernel == "" || h.CPUs == 0 || h.Memory.TotalBytes == 0 || len(h.Queues) == 0 || len(h.LVMConfig.Values) == 0 {
				t.Errorf("host facts missing: kernel %q, %d CPUs, memory %d, %d queues, %d lvm settings",
					h.Kernel, h.CPUs, h.Memory.TotalBytes, len(h.Queues), len(h.LVMConfig.Values))
			}
			// Snapshots captured before keel read its udev rules files
			// lack them: the pass must call them unknown, and re-recording
			// adds exactly those reads.
			re := rec.Snapshot(snap.Host, snap.Version, snap.Time)
			for _, p := range model.UdevRulePaths {
				if _, ok := snap.Files[hostio.OpFile+p]; ok {
					continue
				}
				if f := h.KeelFiles[p]; f == nil || !strings.Contains(f.Unknown, "was not recorded") {
					t.Errorf("%s not in the snapshot: want it unknown, got %+v", p, f)
				}
				delete(re.Files, hostio.OpFile+p)
			}
			// Likewise the files that show a Proxmox VE node (proxmox.go):
			// not looked at then, no node.
			for _, k := range []string{hostio.OpDir + "/etc/pve", hostio.OpReadAt + "/var/lib/dpkg/info/pve-manager.list@0+0"} {
				if _, ok := snap.Files[k]; !ok {
					delete(re.Files, k)
				}
			}
			// Likewise pve-storage's version (probePVEStorageVersion): not
			// asked then, unknown.
			if k := pveStorageVersionCmd.String(); h.Proxmox != nil {
				if _, ok := snap.Commands[k]; !ok {
					delete(re.Commands, k)
					if h.PVEStorageVersion != "" {
						t.Errorf("pve-storage version %q from a snapshot without dpkg-query", h.PVEStorageVersion)
					}
				}
			}
			// Likewise lvmlocal.conf and the devices file (devicesfile.go):
			// not read then, judged absent.
			for _, f := range []string{lvmLocalConfPath, lvmDevicesDir + "/" + defaultDevicesFile} {
				if _, ok := snap.Files[hostio.OpFile+f]; !ok {
					delete(re.Files, hostio.OpFile+f)
					if h.LVMConfig.LVMLocalConf != "" || h.LVMConfig.DevicesFile != nil {
						t.Errorf("%s from a snapshot without it", f)
					}
				}
			}
			// Likewise LVM's profile directory, where keel's autoextend
			// profiles are (probeKeelFiles): not read then, unknown.
			if _, ok := snap.Files[hostio.OpDir+model.LVMProfileDir]; !ok {
				delete(re.Files, hostio.OpDir+model.LVMProfileDir)
				if d := h.KeelFiles[model.LVMProfileDir]; d == nil || d.Unknown == "" {
					t.Errorf("profile directory from a snapshot without it: %+v", d)
				}
			}
			// Likewise /dev/disk/by-path, read only to match declared PV
			// paths (removal.MatchPVs): a snapshot without it has no
			// by-path names, and that is no probe error.
			if _, ok := snap.Files[hostio.OpDir+"/dev/disk/by-path"]; !ok {
				delete(re.Files, hostio.OpDir+"/dev/disk/by-path")
				if len(h.ByPath) != 0 {
					t.Errorf("by-path names from a snapshot without them: %v", h.ByPath)
				}
			}
			// Likewise the device-mapper devices' suspended attribute
			// (suspended.go), read before any command: unknown counts as
			// not suspended.
			for k := range re.Files {
				if _, ok := snap.Files[k]; !ok && strings.HasSuffix(k, "/dm/suspended") {
					delete(re.Files, k)
				}
			}
			// Likewise the guests' configurations (guests.go): what the
			// snapshot lacks is unknown, not an unreadable config.
			newGuestReads := 0
			for k, f := range re.Files {
				if _, ok := snap.Files[k]; !ok && isGuestPath(f.Path) {
					delete(re.Files, k)
					newGuestReads++
				}
			}
			if newGuestReads > 0 && (h.Guests == nil || len(h.Guests.Unknown) == 0 || len(h.Guests.Errors) > 0) {
				t.Errorf("guest configs not in the snapshot: want them unknown, got %+v", h.Guests)
			}
			if h.Suspended != nil {
				t.Errorf("replay found suspended devices: %q", h.Suspended)
			}
			// A snapshot captured while the report asked for lv_all and
			// seg_all loads with the report keel asks now (ParseSnapshot):
			// the replay records that one.
			recorded, err := hostio.ParseSnapshotRaw(raw)
			if err != nil {
				t.Fatal(err)
			}
			_, wasLegacy := recorded.Commands[legacyReportKey]
			_, stillLegacy := snap.Commands[legacyReportKey]
			if wasLegacy && !stillLegacy {
				if raw, err = snap.MarshalText(); err != nil {
					t.Fatal(err)
				}
			}
			again, err := re.MarshalText()
			if err != nil {
				t.Fatal(err)
			}
			body := func(b []byte) []byte { return b[bytes.Index(b, []byte("\n-- ")):] }
			if !bytes.Equal(body(again), body(raw)) {
				t.Errorf("re-recording the replay gives different members (%d vs %d bytes)", len(again), len(raw))
			}
			var out bytes.Buffer
			model.WriteStatus(&out, h)
			if !strings.Contains(out.String(), "lvm config: scan_lvs=") {
				t.Errorf("status text lacks the lvm config line:\n%s", out.String())
			}
		})
	}
}

// TestReplayIsDeterministic probes the same snapshot twice.
func TestReplayIsDeterministic(t *testing.T) {
	a, b := probeSnapshot(t, "mixed"), probeSnapshot(t, "mixed")
	if !reflect.DeepEqual(a, b) {
		t.Error("two probes of one snapshot differ")
	}
}

func TestOrphanPV(t *testing.T) {
	h := probeSnapshot(t, "orphan-pv")
	if len(h.VGs) != 0 || len(h.PVs) != 1 {
		t.Fatalf("%d VGs, %d PVs; want 0 and 1", len(h.VGs), len(h.PVs))
	}
	for _, pv := range h.PVs {
		if pv.VG != "" || pv.Transport != "nvme" || !pv.Fast() || pv.Device != "nvme0n1" || pv.PECount != 0 {
			t.Errorf("pv = %+v", pv)
		}
		if !strings.Contains(strings.Join(pv.ByID, " "), "nvme-QEMU_NVMe_Ctrl_nvme0 ") {
			t.Errorf("by-id = %v", pv.ByID)
		}
	}
}

// TestMixedStack checks a split VDO pool (index on NVMe, middle on HDD, tail
// on NVMe), a thin pool and an attached writeback bcache, all in one pass.
func TestMixedStack(t *testing.T) {
	h := probeSnapshot(t, "mixed")
	p := h.VDOPools["vg0/lvb"]
	if p == nil {
		t.Fatalf("no vdo pool vg0/lvb; pools %v", sortedKeys(h.VDOPools))
	}
	if p.Table == nil || p.Status == nil || p.Stats == nil || p.OnDisk == nil || p.Computed == nil {
		t.Fatalf("vdo pool parts missing: table %v status %v stats %v on disk %v computed %v", p.Table, p.Status, p.Stats, p.OnDisk, p.Computed)
	}
	if p.Table.PhysicalBlocks != p.Stats.PhysicalBlocks || p.Table.PhysicalBlocks != p.Status.TotalBlocks || p.OnDisk.PhysicalBlocks != p.Table.PhysicalBlocks {
		t.Errorf("physical blocks disagree: table %d stats %d status %d super block %d",
			p.Table.PhysicalBlocks, p.Stats.PhysicalBlocks, p.Status.TotalBlocks, p.OnDisk.PhysicalBlocks)
	}
	if p.OnDisk.Journal != p.Computed.Journal || p.OnDisk.Summary != p.Computed.Summary || p.OnDisk.Index != p.Computed.Index {
		t.Errorf("on-disk layout %+v differs from computed %+v", p.OnDisk, p.Computed)
	}
	if got := p.OnDisk.Journal.Count() + p.OnDisk.Summary.Count(); got != 32832 {
		t.Errorf("journal+summary = %d blocks, want 32832", got)
	}
	if p.OnDisk.Summary.Last != p.Table.PhysicalBlocks-1 {
		t.Errorf("summary ends at %d, want the last block %d", p.OnDisk.Summary.Last, p.Table.PhysicalBlocks-1)
	}
	lvSize := h.LVs[p.DataLV].Size
	if lvSize/model.VDOBlockSize != p.Table.PhysicalBlocks {
		t.Errorf("_vdata %d bytes, table %d blocks", lvSize, p.Table.PhysicalBlocks)
	}
	for _, r := range p.Regions {
		if !r.Fast || len(r.On) != 1 || r.On[0].PV != "/dev/nvme0n1" {
			t.Errorf("region %s on %+v (fast %v), want the NVMe PV only", r.Name, r.On, r.Fast)
		}
	}
	if p.Table.CPU != 2 || !p.Table.Compression || !p.Table.Deduplication || p.Table.MaxDiscard != 1 {
		t.Errorf("table = %+v", p.Table)
	}
	if p.Settings["vdo_cpu_threads"] != "2" || p.Settings["vdo_slab_size"] != "2147483648" {
		t.Errorf("lvm vdo settings = %v", p.Settings)
	}
	if p.Status.Mode != "normal" || p.Status.IndexState != "online" || p.Stats.Mode != "normal" {
		t.Errorf("status %+v, stats mode %q", p.Status, p.Stats.Mode)
	}
	if len(p.VDOLVs) != 1 || p.VDOLVs[0] != "vg0/vdo_b" {
		t.Errorf("vdo LVs = %v", p.VDOLVs)
	}

	tp := h.ThinPools["vg0/tp"]
	if tp == nil || tp.Status == nil {
		t.Fatalf("thin pool vg0/tp = %+v", tp)
	}
	if tp.ChunkSize != 512*1024 || !tp.Zero || tp.Status.ReadOnly || tp.Status.NeedsCheck || tp.Status.OutOfDataSpace ||
		tp.Status.DataBlocks*tp.ChunkSize != tp.DataSize || len(tp.ThinLVs) != 1 {
		t.Errorf("thin pool = %+v, status %+v", tp, tp.Status)
	}

	if len(h.Bcache) != 1 || len(h.CacheSets) != 1 {
		t.Fatalf("%d bcache devices, %d cache sets", len(h.Bcache), len(h.CacheSets))
	}
	for uuid, b := range h.Bcache {
		if uuid != b.UUID || b.CacheMode != "writeback" || b.SequentialCutoff != 0 || b.WritebackPercent != 10 || b.State == "" {
			t.Errorf("bcache = %+v", b)
		}
		if h.CacheSets[b.CacheSet] == nil {
			t.Errorf("bcache %s: cache set %q not found", uuid, b.CacheSet)
		}
	}
	for _, c := range h.CacheSets {
		if c.CongestedReadThresholdUS != 2000 || c.CongestedWriteThresholdUS != 20000 || len(c.CacheDevices) != 1 {
			t.Errorf("cache set = %+v", c)
		}
	}
	if h.LVMConfig.Values["devices/scan_lvs"] != "0" || !strings.Contains(h.LVMConfig.LVMConf, "devices {") {
		t.Errorf("lvm config: scan_lvs %q, lvm.conf %d bytes", h.LVMConfig.Values["devices/scan_lvs"], len(h.LVMConfig.LVMConf))
	}
}

// sortedKeys is slices.Sorted(maps.Keys(m)), for tests that list maps.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

type panickingRunner struct{}

func (panickingRunner) Run(context.Context, hostio.Cmd) (hostio.Result, error) { panic("injected") }

// A panic in a probe goroutine fails the pass with an error naming the
// command; it does not end the process.
func TestProbeCatchesPanics(t *testing.T) {
	_, err := Probe(context.Background(), hostio.Source{Runner: panickingRunner{}, FS: hostio.DirFS(t.TempDir())})
	if err == nil || !strings.Contains(err.Error(), "lvm fullreport") || !strings.Contains(err.Error(), "panic: injected") {
		t.Fatalf("Probe: %v", err)
	}
}

// isGuestPath reports whether p is one of the paths probeGuests reads.
func isGuestPath(p string) bool {
	for _, dir := range []string{pveNodes, pveRoot + "/qemu-server", pveRoot + "/lxc", libvirtEtcQemu, libvirtRunQemu} {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// gatedReport is the FS and Runner of a pass whose lvm fullreport does not
// end before the files of lvm.conf's cascade have all been read, or before
// a deadline.
type gatedReport struct {
	hostio.FS
	inner   hostio.Runner
	want    map[string]bool // paths still to be read
	mu      sync.Mutex
	read    chan struct{} // closed once every path in want was read
	timeout time.Duration
}

func (g *gatedReport) ReadFile(name string) ([]byte, error) {
	g.mu.Lock()
	if g.want[name] {
		delete(g.want, name)
		if len(g.want) == 0 {
			close(g.read)
		}
	}
	g.mu.Unlock()
	return g.FS.ReadFile(name)
}

func (g *gatedReport) Run(ctx context.Context, c hostio.Cmd) (hostio.Result, error) {
	if c.String() == fullReportCmd.String() {
		select {
		case <-g.read:
		case <-time.After(g.timeout):
			return hostio.Result{}, fmt.Errorf("%s: lvm.conf's cascade not read while the report ran", c)
		}
	}
	return g.inner.Run(ctx, c)
}

// TestProbeReadsLVMConfigBesideReport: lvm.conf, lvmlocal.conf and the
// devices file are read while lvm fullreport runs, not after it ends (the
// time from the report's end to a check's written report is a check's own
// cost beyond LVM's).
func TestProbeReadsLVMConfigBesideReport(t *testing.T) {
	src := hostio.Replay(loadSnapshot(t, "mixed"))
	g := &gatedReport{FS: src.FS, inner: src.Runner, read: make(chan struct{}), timeout: 5 * time.Second,
		want: map[string]bool{lvmConfPath: true, lvmLocalConfPath: true, path.Join(lvmDevicesDir, defaultDevicesFile): true}}
	src.FS, src.Runner = g, g
	h, err := Probe(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	if h.LVMConfig.LVMConf == "" || len(h.LVMConfig.Values) == 0 {
		t.Fatalf("LVM's configuration not read: %d bytes of lvm.conf, %d values", len(h.LVMConfig.LVMConf), len(h.LVMConfig.Values))
	}
}
