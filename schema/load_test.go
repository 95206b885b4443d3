package schema

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/keel-storage/keel/internal/testenv"
	"github.com/keel-storage/keel/lvm/units"
	"github.com/keel-storage/keel/lvm/vdo"
	"github.com/keel-storage/keel/schema/spec"
)

const badDir = "testdata/bad"

// badCases lists the bad-input corpus: each *.cue file, and each directory
// (a set of drop-ins), with the golden file next to it.
func badCases(t testing.TB) []string {
	ents, err := os.ReadDir(badDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() || strings.HasSuffix(e.Name(), ".cue") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

func goldenName(c string) string {
	return filepath.Join(badDir, strings.TrimSuffix(c, ".cue")+".golden")
}

func examples(t testing.TB) []string {
	m, err := filepath.Glob("../examples/*.cue")
	if err != nil || len(m) < 4 {
		t.Fatalf("examples: %v %v", m, err)
	}
	return m
}

func TestExamplesValid(t *testing.T) {
	for _, ex := range examples(t) {
		cfg, err := Load(ex)
		if err != nil {
			t.Errorf("%s: %v", ex, err)
			continue
		}
		if len(cfg.VolumeGroups) == 0 {
			t.Errorf("%s: no volume groups decoded", ex)
		}
		if cfg.Removal.Mode != "zeroout" || cfg.Removal.Step != "32M" || cfg.Removal.AllowUnzeroedThinReuse {
			t.Errorf("%s: removal defaults not filled in: %+v", ex, cfg.Removal)
		}
	}
}

func TestLabExampleDecodes(t *testing.T) {
	cfg, err := Load("../examples/proxmox-vdo-thick.cue")
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.VolumeGroups["vdolab"].VDOPools["vdopool"]
	want := spec.Threads{Threads: vdo.Threads{Logical: 4, Physical: 4, Hash: 2, CPU: 3, Bio: 2, Ack: 1}}
	if p.Threads != want {
		t.Errorf("threads = %+v, want %+v", p.Threads, want)
	}
	if p.Size != units.NewSize("40G") || p.VirtualSize != units.NewSize("35G") || p.MaxDiscard != units.NewSize("16M") ||
		p.SlabSize != units.NewSize("2G") || p.IndexMemory != units.NewSize("256M") || p.BlockMapCache != units.NewSize("128M") ||
		p.Size.Bytes != 40<<30 || !p.Compression || !p.Deduplication || p.Overcommit {
		t.Errorf("pool = %+v", p)
	}
	if got := cfg.VolumeGroups["vdovg"].PVs; len(got) != 1 || got[0] != "/dev/vdolab/vdolv" {
		t.Errorf("vdovg pvs = %v", got)
	}
	if cfg.LVM == nil || cfg.LVM.ScanLVs == nil || !*cfg.LVM.ScanLVs || len(cfg.LVM.GlobalFilter.Reject) != 3 {
		t.Errorf("lvm = %+v", cfg.LVM)
	}
	if cfg.Proxmox.StorageConfig != "/etc/pve/storage.cfg" {
		t.Errorf("proxmox = %+v", cfg.Proxmox)
	}
}

func TestDefaultsFilled(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "a.cue")
	src := `volumeGroups: vg0: {
	pvs: ["/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0"]
	vdoPools: pool: {lv: "lv", size: "40G", virtualSize: "30G"}
	thinPools: tp: {}
}
`
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.VolumeGroups["vg0"].VDOPools["pool"]
	if !p.Threads.Auto || p.UsedPercentAlert != 90 || p.MaxDiscard.Bytes != 16<<20 || !p.Compression {
		t.Errorf("vdo defaults: %+v", p)
	}
	tp := cfg.VolumeGroups["vg0"].ThinPools["tp"]
	if tp.ChunkSize.Bytes != 512<<10 || tp.DataPercentAlert != 85 || tp.MetadataPercentAlert != 75 || tp.Zero != nil {
		t.Errorf("thin defaults: %+v", tp)
	}
	if cfg.VolumeGroups["vg0"].Create {
		t.Error("create must default to false")
	}
	if cfg.Removal.AllowUnzeroedThinReuse {
		t.Error("removal.allowUnzeroedThinReuse must default to false")
	}
	if err := os.WriteFile(f, []byte(src+"removal: allowUnzeroedThinReuse: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if cfg, err = Load(f); err != nil || !cfg.Removal.AllowUnzeroedThinReuse {
		t.Errorf("removal.allowUnzeroedThinReuse: true not decoded: %+v, %v", cfg.Removal, err)
	}
}

func TestDropInDirectory(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("10-lvm.cue", "lvm: scanLVs: true\n")
	write("20-vg.cue", `volumeGroups: vg0: pvs: ["/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0"]`+"\n")
	write("30-vg.cue", "volumeGroups: vg0: create: true\n")
	write(".hidden.cue", "this is not cue\n")
	write("README", "ignored\n")
	cfg, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !*cfg.LVM.ScanLVs || !cfg.VolumeGroups["vg0"].Create {
		t.Errorf("drop-ins not unified: %+v", cfg)
	}
}

func TestUnreadableIsNotInvalid(t *testing.T) {
	for _, p := range []string{"testdata/does-not-exist.cue", t.TempDir()} {
		_, err := Load(p)
		var e *Error
		if err == nil || errors.As(err, &e) {
			t.Errorf("%s: err = %v, want a read error", p, err)
		}
		if _, err := Vet(p); err == nil {
			t.Errorf("Vet(%s): no error", p)
		}
	}
}

// loadCase loads one corpus entry and returns its problems as the golden
// file shows them (positions relative to testdata/bad).
func loadCase(t *testing.T, c string) ([]Problem, string) {
	t.Helper()
	_, err := Load(filepath.Join(badDir, c))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: err = %v, want *Error", c, err)
	}
	var b strings.Builder
	for _, p := range e.Problems {
		b.WriteString(strings.ReplaceAll(p.String(), badDir+"/", ""))
		b.WriteByte('\n')
	}
	return e.Problems, b.String()
}

func TestBadCorpus(t *testing.T) {
	cases := badCases(t)
	if len(cases) < 30 {
		t.Fatalf("only %d bad inputs", len(cases))
	}
	for _, c := range cases {
		t.Run(c, func(t *testing.T) {
			problems, got := loadCase(t, c)
			if len(problems) == 0 {
				t.Fatal("no problems")
			}
			for _, p := range problems {
				if !p.Pos.IsValid() || p.Pos.Line == 0 || !strings.HasPrefix(p.Pos.File, badDir+"/") {
					t.Errorf("problem without a position in the input: %s", p)
				}
			}
			g := goldenName(c)
			if testenv.Update() {
				if err := os.WriteFile(g, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(g)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("problems differ from %s\ngot:\n%swant:\n%s", g, got, want)
			}
		})
	}
}

// cueBinary finds the cue CLI: on PATH or in GOPATH/bin, where go install
// puts it. Without it the test is skipped by a plain go test and fails
// under make check (testenv.NeedTool).
func cueBinary(t *testing.T) string {
	t.Helper()
	var dirs []string
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		dirs = append(dirs, filepath.Join(strings.TrimSpace(string(out)), "bin"))
	}
	return testenv.NeedTool(t, "cue", `go install cuelang.org/go/cmd/cue@$(go list -m -f '{{.Version}}' cuelang.org/go)`, dirs...)
}

func cueVet(t *testing.T, cue string, target string) (bool, string) {
	t.Helper()
	// As docs/configuration.md tells operators: every .cue file of schema/.
	schemaFiles, err := filepath.Glob("*.cue")
	if err != nil || len(schemaFiles) < 2 {
		t.Fatalf("schema files: %v %v", schemaFiles, err)
	}
	args := append([]string{"vet", "-c"}, schemaFiles...)
	if st, err := os.Stat(target); err == nil && st.IsDir() {
		m, _ := filepath.Glob(filepath.Join(target, "*.cue"))
		args = append(args, m...)
	} else {
		args = append(args, target)
	}
	out, err := exec.Command(cue, args...).CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("cue vet: %v", err)
	}
	return err == nil, string(out)
}

// TestCUECLIAgrees checks that `cue vet -c` with the shipped schema accepts
// the examples and rejects exactly the bad inputs whose problems the schema
// finds; the ones only keel's own checks find (VDO arithmetic, stacking),
// the cue CLI accepts.
func TestCUECLIAgrees(t *testing.T) {
	cue := cueBinary(t)
	for _, ex := range examples(t) {
		if ok, out := cueVet(t, cue, ex); !ok {
			t.Errorf("cue vet rejects %s:\n%s", ex, out)
		}
	}
	for _, c := range badCases(t) {
		problems, _ := loadCase(t, c)
		schemaFinds := false
		for _, p := range problems {
			if p.Check == "" {
				schemaFinds = true
			}
		}
		ok, out := cueVet(t, cue, filepath.Join(badDir, c))
		if ok == schemaFinds {
			t.Errorf("%s: cue vet accepted=%v, keel's schema problems=%v\n%s", c, ok, schemaFinds, out)
		}
	}
}

func TestThreadsJSON(t *testing.T) {
	for _, s := range []string{`"auto"`, `{"logical":4,"physical":4,"hash":2,"cpu":3,"bio":2,"ack":1}`} {
		var th spec.Threads
		if err := json.Unmarshal([]byte(s), &th); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(th)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != s {
			t.Errorf("round trip %s -> %s", s, b)
		}
	}
	var th spec.Threads
	if err := json.Unmarshal([]byte(`"max"`), &th); err == nil {
		t.Error(`"max" accepted`)
	}
}

// TestLoaderMemoryBounded loads an example many times with one Loader: the
// heap must not keep every load (a CUE context retains what it built).
func TestLoaderMemoryBounded(t *testing.T) {
	l := NewLoader()
	var m runtime.MemStats
	const loads = 80
	for i := 0; i < loads; i++ {
		if _, err := l.Load("../examples/proxmox-vdo-thick.cue"); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&m)
	// 80 loads retained would be about 56 MB; one context's worth is ~11 MB.
	if m.HeapAlloc > 32<<20 {
		t.Errorf("heap after %d loads: %d MB, want under 32 MB", loads, m.HeapAlloc>>20)
	}
	runtime.KeepAlive(l)
}

// TestSchemaFormatted checks that the shipped schema is as `cue fmt` writes it.
func TestSchemaFormatted(t *testing.T) {
	cue := cueBinary(t)
	if out, err := exec.Command(cue, "fmt", "--check", "keel.cue", "root.cue").CombinedOutput(); err != nil {
		t.Errorf("cue fmt --check: %v\n%s", err, out)
	}
}

// An absent list mixes plain names and entries that pin an lv_uuid (as lvs
// prints it); both decode, the plain ones with no uuid, and a name listed
// pinned is still checked against the VG's declared LVs.
func TestAbsentPinDecodes(t *testing.T) {
	dir := t.TempDir()
	const uuid = "ZvAEH3-vJm7-4aVw-fIBi-wzcn-Km54-6DNv9g"
	src := `volumeGroups: vms: {
	pvs: ["/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0"]
	absent: ["vm-101-disk-0", {name: "vm-105-disk-0", uuid: "` + uuid + `"}]
}
`
	if err := os.WriteFile(filepath.Join(dir, "pin.cue"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.VolumeGroups["vms"].Absent
	want := []spec.AbsentLV{{Name: "vm-101-disk-0"}, {Name: "vm-105-disk-0", UUID: uuid}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("absent decoded as %+v, want %+v", got, want)
	}
	if names := cfg.VolumeGroups["vms"].AbsentNames(); strings.Join(names, " ") != "vm-101-disk-0 vm-105-disk-0" {
		t.Errorf("AbsentNames %v", names)
	}
	b, err := json.Marshal(got)
	if err != nil || string(b) != `["vm-101-disk-0",{"name":"vm-105-disk-0","uuid":"`+uuid+`"}]` {
		t.Errorf("absent encodes as %s (%v)", b, err)
	}
}
