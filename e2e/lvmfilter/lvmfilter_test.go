//go:build e2e

// Package lvmfilter proves on the real kernel that keel hands LVM what LVM
// means, in one guest boot (scenario.sh):
//
//   - the global_filter keel generates for every example that declares one
//     hides a guest's VG inside a VM disk LV from the host (LVM's alias rule,
//     lib/filters/filter-regex.c), and keel check --audit flags a filter that
//     does not;
//   - for every pattern of corpus.txt, keel vet's verdict equals LVM's own
//     regex engine's (pvs exits 5 on a pattern libdm cannot parse);
//   - a thin pool declared in bare bytes is created at the declared size and
//     chunk size.
//
// Set KEEL_LVMFILTER_SNAPSHOTS=DIR to keep the node snapshots taken under
// each filter (the host-side fixtures of the audit rule).
package lvmfilter

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
	"github.com/keel-storage/keel/schema"
)

// Filters tried besides keel's own: seed 000's list exactly as written
// (rejects only), and Proxmox VE's stock global_filter, which rejects only
// ZFS zvols and RBD devices.
var (
	seed000  = []string{"r|/dev/zd.*|", "r|/dev/rbd.*|", "r|/dev/mapper/.*-(vm|base)--[0-9]+--disk--[0-9]+|"}
	pveStock = []string{"r|/dev/zd.*|", "r|/dev/rbd.*|"}
)

// lvmList renders filter entries as an lvm.conf string array: in a
// double-quoted lvm.conf string only \" and \\ are escapes
// (libdm dm_unescape_double_quotes).
func lvmList(entries []string) string {
	q := make([]string, len(entries))
	for i, e := range entries {
		e = strings.ReplaceAll(e, `\`, `\\`)
		q[i] = `"` + strings.ReplaceAll(e, `"`, `\"`) + `"`
	}
	return "[ " + strings.Join(q, ", ") + " ]"
}

// keelFilter returns the global_filter keel plans for the example, judged
// against trixie's stock lvm.conf (the empty node snapshot), or nil when
// the example declares no filter.
func keelFilter(t *testing.T, keel, root, example string) []string {
	cfg, err := schema.Load(example)
	if err != nil {
		t.Fatalf("%s: %v", example, err)
	}
	if cfg.LVM == nil || cfg.LVM.GlobalFilter == nil {
		return nil
	}
	out, err := exec.Command(keel, "plan", "-c", example, "--node",
		filepath.Join(root, "probes/testdata/snapshots/empty.txtar"), "--format", "json").Output()
	if err != nil {
		t.Fatalf("keel plan %s: %v", example, err)
	}
	var plan struct {
		Actions []struct {
			Kind    string `json:"kind"`
			LVMConf *struct {
				GlobalFilter []string `json:"globalFilter"`
			} `json:"lvmconf"`
		} `json:"actions"`
	}
	if err := json.Unmarshal(out, &plan); err != nil {
		t.Fatalf("keel plan %s: %v", example, err)
	}
	for _, a := range plan.Actions {
		if a.Kind == "lvmconf" && a.LVMConf != nil && len(a.LVMConf.GlobalFilter) > 0 {
			return a.LVMConf.GlobalFilter
		}
	}
	t.Fatalf("keel plan %s: no lvm.conf action with a global_filter", example)
	return nil
}

// vetVerdict runs keel vet on a desired state whose only filter entry
// rejects pattern; it returns vet's exit status and its output.
func vetVerdict(t *testing.T, keel, dir string, i int, pattern string) (int, string) {
	p := filepath.Join(dir, fmt.Sprintf("corpus%02d.cue", i))
	src := "lvm: globalFilter: reject: [" + strconv.Quote(pattern) + "]\n"
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(keel, "vet", p).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatalf("keel vet: %v", err)
	}
	return 0, string(out)
}

func TestLVMSemantics(t *testing.T) {
	root := guest.RepoRoot(t)
	keel := guest.KeelBinary(t)
	read := func(p string) []byte {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	filters := map[string][]string{"seed-000": seed000, "pve-stock": pveStock}
	examples, _ := filepath.Glob(filepath.Join(root, "examples/*.cue"))
	var keelCases []string
	for _, ex := range examples {
		if f := keelFilter(t, keel, root, ex); f != nil {
			name := "keel-" + strings.TrimSuffix(filepath.Base(ex), ".cue")
			filters[name] = f
			keelCases = append(keelCases, name)
			t.Logf("%s: keel's global_filter %s", name, lvmList(f))
		}
	}
	if len(keelCases) == 0 {
		t.Fatal("no example declares a global_filter")
	}
	files := map[string][]byte{
		"corpus.txt": read("e2e/lvmfilter/corpus.txt"),
		"thin.cue":   read("e2e/lvmfilter/thin.cue"),
	}
	for name, f := range filters {
		files["filters/"+name+".conf"] = []byte(lvmList(f))
	}
	corpus := strings.Split(strings.TrimRight(string(files["corpus.txt"]), "\n"), "\n")

	res := guest.Run(t, guest.Spec{
		Disks: []guest.Disk{
			{Kind: guest.NVMe, Size: "4G", Serial: "nvme0"},
			{Kind: guest.HDD, Size: "4G", Serial: "hdd1"},
		},
		Script: string(read("e2e/lvmfilter/scenario.sh")),
		Files:  files, Keel: true, Timeout: 15 * time.Minute,
	})
	file := func(name string) string {
		b, err := res.File(name)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, res.Output)
		}
		return string(b)
	}
	if dir := os.Getenv("KEEL_LVMFILTER_SNAPSHOTS"); dir != "" {
		for name := range filters {
			b, err := res.File("snapshot." + name + ".txtar")
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, "lvmfilter-"+name+".txtar"), b, 0o644)
			}
			if err != nil {
				t.Errorf("keep snapshot %s: %v", name, err)
			}
		}
	}
	vgsOf := func(name string) []string { return strings.Fields(file("vgs." + name)) }
	auditIDs := func(name string) []string {
		var r struct {
			Findings []struct {
				ID string `json:"id"`
			} `json:"findings"`
		}
		if err := json.Unmarshal([]byte(file("audit."+name+".json")), &r); err != nil {
			t.Fatalf("audit %s: %v\n%s", name, err, file("audit."+name+".err"))
		}
		var ids []string
		for _, f := range r.Findings {
			ids = append(ids, f.ID)
		}
		return ids
	}

	t.Run("filters", func(t *testing.T) {
		t.Logf("aliases of vdovg/vm-100-disk-0:\n%s", file("aliases.txt"))
		if !slices.Contains(strings.Fields(file("vgs.nofilter")), "guestvg") {
			t.Fatalf("without a filter the host does not see guestvg; the scenario proves nothing:\n%s", file("vgs.nofilter"))
		}
		// The references: seed 000's rejects hide the guest VG, Proxmox's
		// stock filter does not, and the audit says so.
		if vgs := vgsOf("seed-000"); slices.Contains(vgs, "guestvg") {
			t.Errorf("seed 000's filter as written shows guestvg: %v", vgs)
		}
		if vgs := vgsOf("pve-stock"); !slices.Contains(vgs, "guestvg") {
			t.Errorf("Proxmox's stock filter hides guestvg (%v): the audit case below proves nothing", vgs)
		}
		if ids := auditIDs("pve-stock"); !slices.Contains(ids, "lvm.global_filter") {
			t.Errorf("keel check --audit with scan_lvs=1 and Proxmox's stock filter (guestvg visible): findings %v, want lvm.global_filter", ids)
		}
		for _, name := range keelCases {
			if rc := strings.TrimSpace(file("vgs." + name + ".rc")); rc != "0" {
				t.Errorf("%s: vgs exit %s: %s", name, rc, file("vgs."+name+".err"))
			}
			vgs := vgsOf(name)
			if slices.Contains(vgs, "guestvg") {
				t.Errorf("%s: the host sees the guest's VG through keel's filter %s: vgs %v", name, lvmList(filters[name]), vgs)
			}
			for _, vg := range []string{"vdolab", "vdovg"} {
				if !slices.Contains(vgs, vg) {
					t.Errorf("%s: keel's filter hides the host's own VG %s: vgs %v", name, vg, vgs)
				}
			}
			if ids := auditIDs(name); slices.Contains(ids, "lvm.global_filter") {
				t.Errorf("%s: keel check --audit raises lvm.global_filter for keel's own filter (guestvg hidden)", name)
			}
		}
	})

	t.Run("regex corpus", func(t *testing.T) {
		rcs := strings.Fields(file("corpus.rc"))
		if len(rcs) != len(corpus) {
			t.Fatalf("%d exit statuses for %d patterns:\n%s", len(rcs), len(corpus), res.Output)
		}
		dir := t.TempDir()
		agree, refused := 0, 0
		for i, p := range corpus {
			vet, out := vetVerdict(t, keel, dir, i, p)
			lvmRefuses := rcs[i] != "0"
			if lvmRefuses {
				refused++
			}
			// keel vet refuses what LVM refuses, saying LVM cannot parse it;
			// it may refuse more (a pattern whose parentheses reach into the
			// next entry), but never with that reason.
			keelSaysLVMRefuses := vet == 2 && strings.Contains(out, "LVM cannot parse")
			if lvmRefuses != keelSaysLVMRefuses || (!lvmRefuses && vet != 0 && !strings.Contains(out, "LVM parses")) {
				t.Errorf("pattern %q: lvm exit %s, keel vet exit %d:\n%s", p, rcs[i], vet, out)
				continue
			}
			agree++
			t.Logf("%-50q lvm exit %s, keel vet exit %d %s", p, rcs[i], vet, firstLine(out))
		}
		t.Logf("keel vet agrees with lvm on %d of %d patterns (%d refused by lvm)", agree, len(corpus), refused)
		t.Logf("lvm's messages:\n%s", file("corpus.err"))
	})

	// The lvmconfig cache answers while lvm.conf is unchanged and never
	// after an edit: the edit's value is what keel reads at once.
	t.Run("lvmconfig cache", func(t *testing.T) {
		runs := func(name string) int { return strings.Count(file("cache.runs."+name), "--typeconfig full") }
		scanLVs := func(name string) string {
			var h struct {
				LVMConfig struct {
					Values map[string]string `json:"values"`
				} `json:"lvmConfig"`
			}
			if err := json.Unmarshal([]byte(file("cache.status."+name+".json")), &h); err != nil {
				t.Fatalf("keel status %s: %v", name, err)
			}
			return h.LVMConfig.Values["devices/scan_lvs"]
		}
		if n := runs("same"); n != 1 {
			t.Errorf("3 keel status, lvm.conf unchanged: lvmconfig ran %d times, want 1:\n%s", n, file("cache.runs.same"))
		}
		if n := runs("edited"); n != 1 {
			t.Errorf("2 keel status after an edit of lvm.conf: lvmconfig ran %d times, want 1:\n%s", n, file("cache.runs.edited"))
		}
		for name, want := range map[string]string{"same1": "1", "same3": "1", "edited1": "0", "edited2": "0"} {
			if got := scanLVs(name); got != want {
				t.Errorf("keel status %s: devices/scan_lvs %q, want %q", name, got, want)
			}
		}
	})

	t.Run("thin sizes", func(t *testing.T) {
		t.Logf("keel apply exit %s; commands:\n%s", strings.TrimSpace(file("thin.apply.rc")), file("thin.cmds"))
		lvs := strings.Fields(file("thin.lvs"))
		// lv_name segtype lv_size chunk_size, one row per LV.
		for i := 0; i+3 < len(lvs); i += 4 {
			if lvs[i] == "tp" {
				if lvs[i+1] != "thin-pool" || lvs[i+2] != "2147483648" || lvs[i+3] != "65536" {
					t.Errorf("thin pool tp is %s of %s bytes with %s-byte chunks, want thin-pool 2147483648 65536", lvs[i+1], lvs[i+2], lvs[i+3])
				}
				return
			}
		}
		t.Errorf("no thin pool tp in thinvg; keel apply said:\n%s", file("thin.apply"))
	})
	res.RequireOK(t)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
