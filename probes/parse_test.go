package probes

import (
	"bytes"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/internal/dmioctl"
	"github.com/keel-storage/keel/probes/model"
)

// recorded returns the stdout a snapshot recorded for a command line.
func recorded(t testing.TB, snap, cmdline string) []byte {
	t.Helper()
	rec, ok := loadSnapshot(t, snap).Commands[cmdline]
	if !ok {
		t.Fatalf("%s: command %q not recorded", snap, cmdline)
	}
	return rec.Result.Stdout
}

// recordedFile returns a file (or read-at block) a snapshot recorded.
func recordedFile(t testing.TB, snap, key string) []byte {
	t.Helper()
	rec, ok := loadSnapshot(t, snap).Files[key]
	if !ok {
		t.Fatalf("%s: file %q not recorded", snap, key)
	}
	return rec.Data
}

func mustReplace(t *testing.T, b []byte, old, new string) []byte {
	t.Helper()
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("real output lacks %q", old)
	}
	return bytes.Replace(b, []byte(old), []byte(new), 1)
}

// TestMalformedRealOutput corrupts one field of real command output at a
// time: each parser must return an error naming the command and the field.
func TestMalformedRealOutput(t *testing.T) {
	report := recorded(t, "mixed", fullReportCmd.String())
	table := recorded(t, "mixed", dmTableCmd.String())
	status := recorded(t, "mixed", dmStatusCmd.String())
	stats := recorded(t, "mixed", "dmsetup message vg0-lvb-vpool 0 stats")
	config := recorded(t, "mixed", lvmConfigCmd.String())
	vdoStatus := func(b []byte) error {
		lines, err := parseDMLines("dmsetup status", b)
		if err != nil {
			return err
		}
		_, err = model.ParseVDOStatus(lines["vg0-lvb-vpool"][0].Args)
		return err
	}
	thinStatus := func(b []byte) error {
		lines, err := parseDMLines("dmsetup status", b)
		if err != nil {
			return err
		}
		_, err = model.ParseThinPoolStatus(lines["vg0-tp-tpool"][0].Args)
		return err
	}
	vdoTable := func(b []byte) error {
		lines, err := parseDMLines("dmsetup table", b)
		if err != nil {
			return err
		}
		l := lines["vg0-lvb-vpool"][0]
		_, err = parseVDOTable(l.Length, l.Args)
		return err
	}
	report1 := func(b []byte) error { _, err := parseFullReport(b); return err }
	stats1 := func(b []byte) error { _, err := parseVDOStats(b); return err }
	config1 := func(b []byte) error { _, err := parseLVMConfig(b); return err }
	for _, tc := range []struct {
		name     string
		parse    func([]byte) error
		in       []byte
		old, new string
		want     []string
	}{
		{"report json", report1, report, `"report"`, `"report" x`, []string{"lvm fullreport"}},
		{"report extent size", report1, report, `"vg_extent_size":"4194304"`, `"vg_extent_size":"4M"`, []string{"lvm fullreport", "vg vg0", "vg_extent_size"}},
		{"report pv size", report1, report, `"pv_size":"`, `"pv_size":"-`, []string{"lvm fullreport", "pv_size"}},
		{"report seg start", report1, report, `"seg_start_pe":"0"`, `"seg_start_pe":"zero"`, []string{"lvm fullreport", "seg_start_pe"}},
		{"report devices", report1, report, `lvb_vdata(0)`, `lvb_vdata(`, []string{"lvm fullreport", "devices"}},
		{"report lv attr", report1, report, `"lv_attr":"Dwi-ao----"`, `"lv_attr":"D"`, []string{"lvm fullreport", "lv_attr"}},
		{"table prefix", vdoTable, table, "vg0-lvb-vpool: ", "vg0-lvb-vpool ", []string{"dmsetup table", "line 1"}},
		{"table length", vdoTable, table, "vg0-lvb-vpool: 0 ", "vg0-lvb-vpool: x ", []string{"dmsetup table", "start/length"}},
		{"vdo version", vdoTable, table, " V4 ", " V9 ", []string{"dmsetup table", "vdo", "version"}},
		{"vdo storage size", vdoTable, table, " 3407872 ", " 34x ", []string{"dmsetup table", "vdo", "storage size"}},
		{"vdo odd options", vdoTable, table, " physical 1", " physical", []string{"dmsetup table", "odd number"}},
		{"vdo threads", vdoTable, table, " cpu 2 ", " cpu two ", []string{"dmsetup table", "cpu"}},
		{"vdo status fields", vdoStatus, status, " normal - online", " normal online", []string{"dmsetup status", "vdo", "want 7"}},
		{"vdo status used", vdoStatus, status, "online online ", "online online x", []string{"dmsetup status", "used blocks"}},
		{"thin status data", thinStatus, status, " 0/4096 ", " 0-4096 ", []string{"dmsetup status", "thin-pool", "data"}},
		{"thin status mode", thinStatus, status, " - rw ", " - rx ", []string{"dmsetup status", "thin-pool", "mode"}},
		{"stats number", stats1, stats, "physicalBlocks : ", "physicalBlocks : -", []string{"dmsetup message stats", "physicalBlocks"}},
		{"stats missing", stats1, stats, "physicalBlocks : ", "physicalBlockz : ", []string{"dmsetup message stats", "physicalBlocks missing"}},
		{"stats brace", stats1, stats, "{ version", "version", []string{"dmsetup message stats", "want '{'"}},
		{"stats unterminated", stats1, stats[:len(stats)/2], "", "", []string{"dmsetup message stats"}},
		{"stats advice", stats1, stats, "dedupeAdviceValid : 0", "dedupeAdviceValid : x", []string{"dmsetup message stats", "hashLock.dedupeAdviceValid"}},
		{"config section", config1, config, "devices {", "devices", []string{"lvmconfig", "key=value"}},
		{"config close", config1, config, "}\n", "\n", []string{"lvmconfig", "not closed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			if tc.old != "" {
				in = mustReplace(t, in, tc.old, tc.new)
			}
			err := tc.parse(in)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestVDOBlocksReal decodes the real geometry and super block and checks
// that a flipped byte is caught by the checksum.
func TestVDOBlocksReal(t *testing.T) {
	geo := recordedFile(t, "mixed", "at/dev/mapper/vg0-lvb_vdata@0+4096")
	l, err := decodeVDOGeometry(geo)
	if err != nil {
		t.Fatal(err)
	}
	if l.Index != (model.BlockRange{First: 1, Last: 679127}) || l.SuperBlock.First != 679128 || l.IndexMemory != vdoDefaultIndexGB || l.SparseIndex {
		t.Errorf("geometry = %+v", l)
	}
	sb := recordedFile(t, "mixed", "at/dev/mapper/vg0-lvb_vdata@2781708288+4096")
	if err := decodeVDOSuperBlock(sb, l); err != nil {
		t.Fatal(err)
	}
	if l.SlabSize != 524288 || l.BlockMapRoots != (model.BlockRange{First: 679129, Last: 679188}) || l.SlabDepot.First != 679189 {
		t.Errorf("super block layout = %+v", l)
	}
	for _, tc := range []struct {
		name string
		at   int
		b    []byte
		dec  func([]byte) error
		want string
	}{
		{"geometry crc", 0x30, geo, func(b []byte) error { _, err := decodeVDOGeometry(b); return err }, "vdo geometry: checksum"},
		{"geometry magic", 0, geo, func(b []byte) error { _, err := decodeVDOGeometry(b); return err }, "vdo geometry: magic"},
		{"super block crc", 0x70, sb, func(b []byte) error { l2 := *l; return decodeVDOSuperBlock(b, &l2) }, "vdo super block: checksum"},
		{"super block version", 4, sb, func(b []byte) error { l2 := *l; return decodeVDOSuperBlock(b, &l2) }, "vdo super block: header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.Clone(tc.b)
			b[tc.at] ^= 0x40
			if err := tc.dec(b); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := decodeVDOGeometry(geo[:50]); err == nil {
		t.Error("short geometry: no error")
	}
	if err := decodeVDOSuperBlock(sb[:100], l); err == nil {
		t.Error("short super block: no error")
	}
}

// TestSysfsValues covers the small sysfs and procfs parsers with values read
// from the guest's sysfs in the snapshots.
func TestSysfsValues(t *testing.T) {
	bc := "file/sys/block/bcache0/bcache/"
	mode, err := parseCacheMode(string(recordedFile(t, "mixed", bc+"cache_mode")))
	if err != nil || mode != "writeback" {
		t.Errorf("cache_mode = %q, %v", mode, err)
	}
	cut, err := parseHumanBytes(string(recordedFile(t, "mixed", bc+"sequential_cutoff")))
	if err != nil || cut != 0 {
		t.Errorf("sequential_cutoff = %d, %v", cut, err)
	}
	rate, err := parseHumanBytes(string(recordedFile(t, "mixed", bc+"writeback_rate")))
	if err != nil || rate == 0 {
		t.Errorf("writeback_rate = %d, %v", rate, err)
	}
	for _, bad := range []string{"", "x", "-1k", "[writeback"} {
		if _, err := parseHumanBytes(bad); err == nil {
			t.Errorf("parseHumanBytes(%q): no error", bad)
		}
		if _, err := parseCacheMode(bad); err == nil {
			t.Errorf("parseCacheMode(%q): no error", bad)
		}
	}
	n, err := parseCPUList(recordedFile(t, "mixed", "file/sys/devices/system/cpu/online"))
	if err != nil || n != 2 {
		t.Errorf("cpus = %d, %v", n, err)
	}
	for _, bad := range []string{"", "a", "3-1", "0-x"} {
		if _, err := parseCPUList([]byte(bad)); err == nil {
			t.Errorf("parseCPUList(%q): no error", bad)
		}
	}
	m, err := parseMeminfo(recordedFile(t, "mixed", "file/proc/meminfo"))
	if err != nil || m.TotalBytes < m.AvailableBytes || m.TotalBytes < 1<<30 {
		t.Errorf("meminfo = %+v, %v", m, err)
	}
	if _, err := parseMeminfo([]byte("MemTotal: x kB\n")); err == nil || !strings.Contains(err.Error(), "MemTotal") {
		t.Errorf("bad meminfo: %v", err)
	}
}

// TestStorageCfg parses the guest's storage.cfg with a thin storage using the
// saferemove options of the pve-storage blkdiscard patch appended.
func TestStorageCfg(t *testing.T) {
	cfg := append(recordedFile(t, "pve", "file"+DefaultPVEStorageCfg), []byte(`
lvmthin: thinstore
	thinpool tp
	vgname thinvg
	saferemove 1
	saferemove_stepsize 32
	saferemove_discard 1
	saferemove_throughput 1048576
`)...)
	p, err := parseStorageCfg(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Storages) != 3 {
		t.Fatalf("storages = %+v", p.Storages)
	}
	s := p.Storages[2]
	if s.Type != "lvmthin" || s.ID != "thinstore" || s.VG != "thinvg" || !s.Saferemove || !s.SaferemoveDiscard ||
		s.SaferemoveStepsize != "32" || s.SaferemoveThroughput != "1048576" || s.Options["thinpool"] != "tp" {
		t.Errorf("storage = %+v", s)
	}
	for _, bad := range []string{"\tvgname x\n", "lvm\n"} {
		if _, err := parseStorageCfg([]byte(bad)); err == nil || !strings.HasPrefix(err.Error(), "storage.cfg: line 1") {
			t.Errorf("parseStorageCfg(%q): %v", bad, err)
		}
	}
}

// A device-mapper device with no live table (created and never loaded: an
// LVM command killed half-way, as e2e/kill can leave kvg-pvmove0) is
// listed by name alone; the probe once failed the whole
// pass on it ("want start, length and target"). The lines come from the
// in-process formatter, byte-identical to dmsetup's (e2e/probes).
func TestDMLinesDeviceWithoutTable(t *testing.T) {
	b := dmioctl.AppendLines(nil, "kvg-pvmove0", nil, true)
	b = dmioctl.AppendLines(b, "kvg-keep", []dmioctl.Target{{Start: 0, Length: 8192, Type: "linear", Params: "259:0 2048"}}, true)
	m, err := parseDMLines("dmsetup table", b)
	if err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	if lines, ok := m["kvg-pvmove0"]; !ok || len(lines) != 0 {
		t.Errorf("the device without a table: %v %v, want present with no lines", lines, ok)
	}
	if l := m["kvg-keep"]; len(l) != 1 || l[0].Target != "linear" || l[0].Args != "259:0 2048" {
		t.Errorf("the device after it: %+v", l)
	}
}
