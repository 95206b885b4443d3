package lvm

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// TestValidName checks the name rule against LVM's: the characters, the
// leading '-', the length limit and the two reserved names.
func TestValidName(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"vm-100-disk-0", true},
		{"del-vm-100-disk-0", true},
		{"a", true},
		{"_x+y.z", true},
		{".hidden", true},
		{"...", true},
		{"", false},
		{"-rf", false},
		{".", false},
		{"..", false},
		{"a b", false},
		{"a/b", false},
		{"a;b", false},
		{"über", false},
		{"a\x00b", false},
		{strings.Repeat("x", 127), true},
		{strings.Repeat("x", 128), false},
	} {
		if got := ValidName(c.name); got != c.ok {
			t.Errorf("ValidName(%q) = %v, want %v", c.name, got, c.ok)
		}
	}
}

// TestParse checks what Parse accepts: exactly one '/' between two valid
// names, and that String gives the text back.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Name
		ok   bool
	}{
		{"vg/lv", Name{"vg", "lv"}, true},
		{"t-vg/del-vm-1", Name{"t-vg", "del-vm-1"}, true},
		{"vdosplit/pool_vdata", Name{"vdosplit", "pool_vdata"}, true},
		{"vg0/lvol0_pmspare", Name{"vg0", "lvol0_pmspare"}, true},
		{"", Name{}, false},
		{"vg", Name{}, false},
		{"vg/", Name{}, false},
		{"/lv", Name{}, false},
		{"vg/lv/x", Name{}, false},
		{"vg//lv", Name{}, false},
		{"/dev/vg/lv", Name{}, false},
		{"vg/-lv", Name{}, false},
		{"-vg/lv", Name{}, false},
		{"vg/..", Name{}, false},
		{"vg/[pool_tdata]", Name{}, false},
		{"vg/lv name", Name{}, false},
		{"vg/" + strings.Repeat("x", 128), Name{}, false},
	} {
		got, err := Parse(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v, ok %v", c.in, got, err, c.want, c.ok)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidName) || !strings.Contains(err.Error(), `"`+c.in+`"`) {
				t.Errorf("Parse(%q): error %q does not wrap ErrInvalidName or name the text", c.in, err)
			}
			continue
		}
		if s := got.String(); s != c.in {
			t.Errorf("Parse(%q).String() = %q", c.in, s)
		}
	}
}

// TestSplit checks that Split cuts at the first '/' as strings.Cut does,
// checking nothing.
func TestSplit(t *testing.T) {
	for in, want := range map[string]Name{
		"vg/lv":   {"vg", "lv"},
		"vg":      {"vg", ""},
		"vg/":     {"vg", ""},
		"vg/a/b":  {"vg", "a/b"},
		"":        {},
		"vg/*":    {"vg", "*"},
		"/dev/vg": {"", "dev/vg"},
	} {
		if got := Split(in); got != want {
			t.Errorf("Split(%q) = %+v, want %+v", in, got, want)
		}
	}
}

func TestDMName(t *testing.T) {
	for _, c := range []struct {
		n          Name
		name, path string
	}{
		{Name{"t-vg", "del-vm-1"}, "t--vg-del--vm--1", "/dev/mapper/t--vg-del--vm--1"},
		{Name{"vg-a", "del-vm-1"}, "vg--a-del--vm--1", "/dev/mapper/vg--a-del--vm--1"},
		{Name{"vdolab", "vdolv"}, "vdolab-vdolv", "/dev/mapper/vdolab-vdolv"},
		{Name{"a--b", "-"}, "a----b---", "/dev/mapper/a----b---"},
		{Name{"vg", ""}, "vg-", "/dev/mapper/vg-"},
	} {
		if got := c.n.DMName(); got != c.name {
			t.Errorf("%v.DMName() = %q, want %q", c.n, got, c.name)
		}
		if got := c.n.DMPath(); got != c.path {
			t.Errorf("%v.DMPath() = %q, want %q", c.n, got, c.path)
		}
	}
}

func TestDMPrefix(t *testing.T) {
	for vg, want := range map[string]string{"vdo-lab": "vdo--lab-", "vg0": "vg0-", "a--b": "a----b-"} {
		if got := DMPrefix(vg); got != want {
			t.Errorf("DMPrefix(%q) = %q, want %q", vg, got, want)
		}
		if n := (Name{VG: vg, LV: "x-y"}); !strings.HasPrefix(n.DMName(), DMPrefix(vg)) {
			t.Errorf("%v.DMName() = %q does not begin with DMPrefix %q", n, n.DMName(), DMPrefix(vg))
		}
	}
}

// TestSnapshotNames checks Parse, String, DMName and DMPath against what
// LVM itself reported on the test guests: for every LV of every captured
// node snapshot, its lv_full_name parses and prints back, DMPath is LVM's
// lv_dm_path, and every device-mapper device LVM made (uuid "LVM-<vg
// uuid><lv uuid>[-<layer>]") is named DMName, or DMName "-" layer for a
// layer device ("vg0-tp-tpool").
func TestSnapshotNames(t *testing.T) {
	files, err := filepath.Glob("../probes/testdata/snapshots/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no snapshots (%v)", err)
	}
	var lvsSeen, dmSeen int
	for _, f := range files {
		a, err := txtar.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		byUUID := map[string]Name{}
		dmNames := map[string]string{}
		dmUUIDs := map[string]string{}
		for _, file := range a.Files {
			switch {
			case strings.HasPrefix(file.Name, "cmd/lvm-fullreport-") && strings.HasSuffix(file.Name, "/stdout"):
				var rep struct {
					Report []struct {
						LV []struct {
							UUID     string `json:"lv_uuid"`
							FullName string `json:"lv_full_name"`
							DMPath   string `json:"lv_dm_path"`
							VG       string `json:"vg_name"`
						} `json:"lv"`
					} `json:"report"`
				}
				if err := json.Unmarshal(file.Data, &rep); err != nil {
					t.Fatalf("%s: %s: %v", f, file.Name, err)
				}
				for _, r := range rep.Report {
					for _, lv := range r.LV {
						if lv.FullName == "" {
							continue
						}
						lvsSeen++
						n, err := Parse(lv.FullName)
						if err != nil {
							t.Errorf("%s: %v", f, err)
							continue
						}
						if n.String() != lv.FullName || n.VG != lv.VG {
							t.Errorf("%s: Parse(%q) = %+v (vg_name %q)", f, lv.FullName, n, lv.VG)
						}
						if lv.DMPath != "" && n.DMPath() != lv.DMPath {
							t.Errorf("%s: %v.DMPath() = %q, LVM says %q", f, n, n.DMPath(), lv.DMPath)
						}
						byUUID[strings.ReplaceAll(lv.UUID, "-", "")] = n
					}
				}
			case strings.HasPrefix(file.Name, "file/sys/block/dm-"):
				dev, attr, _ := strings.Cut(strings.TrimPrefix(file.Name, "file/sys/block/"), "/")
				switch attr {
				case "dm/name":
					dmNames[dev] = strings.TrimSpace(string(file.Data))
				case "dm/uuid":
					dmUUIDs[dev] = strings.TrimSpace(string(file.Data))
				}
			}
		}
		for dev, uuid := range dmUUIDs {
			rest, ok := strings.CutPrefix(uuid, "LVM-")
			if !ok {
				continue
			}
			if len(rest) < 64 {
				t.Errorf("%s: %s: uuid %q is not LVM-<vg uuid><lv uuid>", f, dev, uuid)
				continue
			}
			n, ok := byUUID[rest[32:64]]
			if !ok {
				t.Errorf("%s: %s (%s): no LV with uuid %s in the report", f, dev, dmNames[dev], rest[32:64])
				continue
			}
			dmSeen++
			layer := strings.TrimPrefix(rest[64:], "-")
			if got := dmNames[dev]; got != n.DMName() && got != n.DMName()+"-"+layer {
				t.Errorf("%s: %s is named %q; %v.DMName() = %q (layer %q)", f, dev, got, n, n.DMName(), layer)
			}
		}
	}
	if lvsSeen == 0 || dmSeen == 0 {
		t.Errorf("snapshots hold %d LVs and %d LVM device-mapper devices; want some of each", lvsSeen, dmSeen)
	}
	t.Logf("%d LVs, %d device-mapper devices", lvsSeen, dmSeen)
}

// TestDMNameAllocs guards DMName's cost: it runs once per LV on every
// probe and allocates the result only.
func TestDMNameAllocs(t *testing.T) {
	n := Name{"vdo-lab", "vm-100-disk-0"}
	if a := testing.AllocsPerRun(100, func() { _ = n.DMName() }); a != 1 {
		t.Errorf("DMName allocates %v times, want 1", a)
	}
}

// DMUUID drops the dashes of the display form after "LVM-".
func TestDMUUID(t *testing.T) {
	const vg, lv = "eoY1bk-5y3A-zeDZ-0Vpe-zU2q-bDA7-Zd1Kcn", "0w4Gvu-hSzw-cYrx-VmlX-Mdu2-sOvo-mUeTIK"
	want := "LVM-eoY1bk5y3AzeDZ0VpezU2qbDA7Zd1Kcn0w4GvuhSzwcYrxVmlXMdu2sOvomUeTIK"
	if got := DMUUID(vg, lv); got != want {
		t.Errorf("DMUUID = %q, want %q", got, want)
	}
	if got := string(AppendDMUUID([]byte("x/"), vg, lv)); got != "x/"+want {
		t.Errorf("AppendDMUUID = %q", got)
	}
	// The buffer's own dashes stay; only the UUIDs' go.
	if got := string(AppendDMUUID([]byte("a-b/"), "-x-", "--y-z")); got != "a-b/LVM-xyz" {
		t.Errorf("AppendDMUUID of dashes = %q", got)
	}
}

// TestDMLayerName: a layer device is the LV's dm name, "-" and the layer,
// the LV's own hyphens doubled and the joining one not (lvm2's
// dm_build_dm_name).
func TestDMLayerName(t *testing.T) {
	for _, c := range []struct {
		n           Name
		layer, want string
	}{
		{Name{VG: "vg", LV: "pool"}, LayerVDOPool, "vg-pool-vpool"},
		{Name{VG: "pve-data", LV: "thin-1"}, LayerThinPool, "pve--data-thin--1-tpool"},
	} {
		if got := DMLayerName(c.n.DMName(), c.layer); got != c.want {
			t.Errorf("DMLayerName(%q, %q) = %q, want %q", c.n.DMName(), c.layer, got, c.want)
		}
	}
}
