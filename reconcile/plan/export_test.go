package plan

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keel-storage/keel/lvm/lvmregex"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/schema"
	"github.com/keel-storage/keel/schema/spec"
)

// TestExportChecksClean exports every host snapshot captured in the test
// guest, loads the export as keel vet does, and plans it against the same
// host: no finding about a setting may remain, only the host's health.
func TestExportChecksClean(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(snapshotDir, "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no snapshots in %s (%v)", snapshotDir, err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txtar")
		t.Run(name, func(t *testing.T) {
			h := replayHost(t, name)
			ex := Export(h)
			res := PlanWith(loadExport(t, ex), h, Memory{Today: "2026-12-01"})
			// A host whose scan_lvs=1 filter lets VM disks through (the
			// audit says so) is exported as it is: scanLVs true and its
			// filter left out, which keel check reports on the desired state.
			leaks := slices.ContainsFunc(Audit(h).Findings, func(f Finding) bool { return f.Key() == "lvm.global_filter@lvm.conf" })
			var problems []string
			for _, f := range res.Findings {
				if f.Severity >= Warning && !healthID[f.ID] {
					problems = append(problems, f.Key())
					if leaks && f.Key() == "lvm.global_filter@desired:lvm.scanLVs" {
						continue
					}
					if f.Key() != hostProblem[name] {
						t.Errorf("%s %s: %s (expected %q, observed %q)", f.ID, f.Object, f.Message, f.Expected, f.Observed)
					}
				}
			}
			if want := hostProblem[name]; want != "" && !slices.Contains(problems, want) {
				t.Errorf("the export hides the host's problem %s", want)
			}
			for _, a := range res.Actions {
				if a.Kind != KindNone && a.Kind != KindFile && !slices.Contains(a.Remedies, hostProblem[name]) {
					t.Errorf("action planned against the host's own export: %s (%s)", a.ID, a.Summary)
				}
			}
			if t.Failed() {
				t.Logf("export:\n%s\nnotes: %q", ex.Text, ex.Notes)
			}
		})
	}
}

// healthID are the findings a desired state does not change: the host's
// health (inactive pools), Proxmox's storage.cfg (which keel reads, never
// writes), and keel's own udev rules, which the first keel apply installs.
var healthID = map[FindingID]bool{"vg.inactive": true, "pve.discard_on_remove": true,
	"bcache.udev_rule": true, "activation.udev_rule": true}

// hostProblem is, per snapshot, the finding about the host that its export
// must keep raising: the split pool whose grow moved its recovery journal
// off the NVMe PV is exported as split, so keel reports the journal.
var hostProblem = map[string]string{"vdo-split-grown": "vdo.layout.journal_off_fast@vdosplit/pool"}

// TestExportFollowsRunningValues changes a captured pool's running values
// (as a tuned host would have them) and checks the export carries each one:
// planned against the changed host it raises nothing, and planned against
// the captured host (the values back at LVM's defaults) each differs.
func TestExportFollowsRunningValues(t *testing.T) {
	h := replayHost(t, "vdo-defaults")
	pool := h.VDOPools["vdodef/vdopool"]
	if pool == nil || pool.Table == nil {
		t.Fatal("snapshot vdo-defaults has no active vdodef/vdopool")
	}
	tb := *pool.Table
	tb.Logical, tb.Physical, tb.Hash, tb.CPU, tb.Bio, tb.Ack = 3, 2, 1, 3, 2, 2
	tb.MaxDiscard, tb.Compression = 4096, false
	tuned := *pool
	tuned.Table = &tb
	th := *h
	th.VDOPools = map[string]*model.VDOPool{"vdodef/vdopool": &tuned}
	cfg := loadExport(t, Export(&th))
	for _, f := range PlanWith(cfg, &th, Memory{}).Findings {
		if f.Severity >= Warning {
			t.Errorf("tuned host against its own export: %s %s (expected %q, observed %q)", f.ID, f.Object, f.Expected, f.Observed)
		}
	}
	got := map[FindingID]bool{}
	for _, f := range PlanWith(cfg, h, Memory{}).Findings {
		got[f.ID] = true
	}
	for _, id := range []FindingID{"vdo.threads", "vdo.max_discard", "vdo.compression"} {
		if !got[id] {
			t.Errorf("the export does not carry the running value behind %s", id)
		}
	}
}

// loadExport loads an export as keel vet does; a refusal fails the test.
func loadExport(t *testing.T, ex Exported) *spec.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "export.cue")
	if err := os.WriteFile(path, []byte(ex.Text), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := schema.NewLoader().Load(path)
	if err != nil {
		t.Fatalf("keel vet refuses the export: %v\n%s", err, ex.Text)
	}
	return d.Config
}

// TestExportFilterAdvice: the advice for a host filter of rejects followed
// by a|.*| names what the rejects alone would hide besides, and keel's own
// filter model agrees: on the vdo-thick capture (seed 000's rejects and
// a|.*|) the VM disk is accepted as /dev/dm-3 with a|.*| and hidden without.
func TestExportFilterAdvice(t *testing.T) {
	h := replayHost(t, "vdo-thick")
	var note string
	for _, n := range Export(h).Notes {
		if strings.HasPrefix(n, "lvm.conf: devices/global_filter") {
			note = n
		}
	}
	if strings.Contains(note, "changes nothing") || strings.Contains(note, "reads it as the rejects alone") {
		t.Errorf("the advice says a|.*| changes nothing: %s", note)
	}
	if !strings.Contains(note, "the rejects alone also hide vdovg/vm-100-disk-0 (a|.*| accepts it as /dev/dm-3)") {
		t.Errorf("the advice does not name the VM disk a|.*| lets through: %s", note)
	}
	got := parseLVMList(h.LVMConfig.Values["devices/global_filter"])
	if len(got) < 2 || got[len(got)-1] != "a|.*|" {
		t.Fatalf("the capture's filter %q no longer ends in a|.*|", got)
	}
	with, err := lvmregex.NewFilter(got)
	if err != nil {
		t.Fatal(err)
	}
	without, err := lvmregex.NewFilter(got[:len(got)-1])
	if err != nil {
		t.Fatal(err)
	}
	aliases := newPlanner(h).lvAliases(h.LVs["vdovg/vm-100-disk-0"])
	if v := with.Decide(aliases); !v.Accepted || v.Alias != "/dev/dm-3" {
		t.Errorf("with a|.*|: %+v, want accepted as /dev/dm-3", v)
	}
	if v := without.Decide(aliases); v.Accepted {
		t.Errorf("the rejects alone accept the VM disk: %+v", v)
	}
}

// TestExportBcacheTunables: the export carries the cache set's congested
// thresholds (bcache-defaults was captured with the kernel's 2000 and
// 20000 µs) and, on a device whose writeback_percent is 0, its fixed
// writeback_rate, so that keel restores them after adoption: planned
// against the host it came from it raises nothing, planned against the
// same host with other values it raises bcache.tunable. With
// writeback_percent above 0 the rate is the kernel's to move and is left
// out, with a NOTE.
func TestExportBcacheTunables(t *testing.T) {
	h := replayHost(t, "bcache-defaults")
	if len(h.Bcache) != 1 || len(h.CacheSets) != 1 {
		t.Fatalf("bcache-defaults: want one bcache device and one cache set, have %d and %d", len(h.Bcache), len(h.CacheSets))
	}
	var b *model.Bcache
	for _, d := range h.Bcache {
		b = d
	}
	cs := h.CacheSets[b.CacheSet]
	if cs == nil || cs.CongestedReadThresholdUS != 2000 || cs.CongestedWriteThresholdUS != 20000 || b.WritebackPercent == 0 {
		t.Fatalf("bcache-defaults: want a cache set with thresholds 2000/20000 and writeback_percent above 0, have %+v, percent %d", cs, b.WritebackPercent)
	}
	ex := Export(h)
	for _, line := range []string{"\t\tcongestedReadThresholdUs: 2000\n", "\t\tcongestedWriteThresholdUs: 20000\n"} {
		if !strings.Contains(ex.Text, line) {
			t.Errorf("export of bcache-defaults lacks %q:\n%s", line, ex.Text)
		}
	}
	if strings.Contains(ex.Text, "writebackRate:") {
		t.Errorf("export declares writebackRate with writeback_percent %d:\n%s", b.WritebackPercent, ex.Text)
	}
	if !slices.ContainsFunc(ex.Notes, func(n string) bool { return strings.Contains(n, "writebackRate left out") }) {
		t.Errorf("no NOTE says why writebackRate is left out: %q", ex.Notes)
	}
	// The thresholds back at 0 (keel's reference rules): the export restores them.
	zero := *cs
	zero.CongestedReadThresholdUS, zero.CongestedWriteThresholdUS = 0, 0
	zh := *h
	zh.CacheSets = map[string]*model.CacheSet{cs.UUID: &zero}
	if got := tunableFinding(PlanWith(loadExport(t, ex), &zh, Memory{})); !strings.Contains(got, "congested_read_threshold_us=2000 congested_write_threshold_us=20000") {
		t.Errorf("export against the host with thresholds 0: bcache.tunable expected %q, want both thresholds", got)
	}

	// The same device with writeback_percent 0 and a fixed rate of 3.3M
	// (6797 sectors/s, which 3.3M, truncated by bch_hprint, does not give
	// back by a plain division).
	fixed := *b
	fixed.WritebackPercent = 0
	fixed.Tunables = maps.Clone(b.Tunables)
	fixed.Tunables["writeback_percent"] = "0"
	fixed.Tunables["writeback_rate"] = model.Hprint(6797 * 512)
	fh := *h
	fh.Bcache = map[string]*model.Bcache{fixed.UUID: &fixed}
	fex := Export(&fh)
	if !strings.Contains(fex.Text, "\t\twritebackRate: ") {
		t.Fatalf("export with writeback_percent 0 lacks writebackRate:\n%s", fex.Text)
	}
	cfg := loadExport(t, fex)
	if got := tunableFinding(PlanWith(cfg, &fh, Memory{})); got != "" {
		t.Errorf("host with a fixed rate against its own export: bcache.tunable expected %q", got)
	}
	other := fixed
	other.Tunables = maps.Clone(fixed.Tunables)
	other.Tunables["writeback_rate"] = "512.0k"
	oh := fh
	oh.Bcache = map[string]*model.Bcache{other.UUID: &other}
	if got := tunableFinding(PlanWith(cfg, &oh, Memory{})); !strings.Contains(got, "writeback_rate=3.3M") {
		t.Errorf("export against the host at 512.0k: bcache.tunable expected %q, want writeback_rate=3.3M", got)
	}
}

// tunableFinding is the Expected of res's bcache.tunable finding, "" when
// there is none.
func tunableFinding(res Result) string {
	for _, f := range res.Findings {
		if f.ID == BcacheTunable {
			return f.Expected
		}
	}
	return ""
}
