//go:build e2e

// Package check runs keel check and keel plan on real storage stacks in the
// qemu test guest and asserts the exact finding IDs of the JSON report.
package check

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// script builds each stack in turn in one boot, runs keel check (and, for
// the grown split pool, keel plan and the pvmove it prints), and tears the
// stack down. Each check writes $OUT/<case>.json and $OUT/<case>.rc.
const script = `set -uo pipefail
. /mnt/host/stacks.sh
nv=$(disk nvme0) || exit 2
hd=$(disk hdd1) || exit 2
ssd=$(disk ssd2) || exit 2
lvm_conf_save
D=/mnt/host/desired
check() { # check CASE DESIRED [extra flags]
	local name=$1 desired=$2; shift 2
	local rc=0
	if [ "$desired" = audit ]; then
		"$KEEL" check --audit --format json "$@" >"$OUT/$name.json" || rc=$?
	else
		"$KEEL" check -c "$desired" --format json "$@" >"$OUT/$name.json" || rc=$?
	fi
	echo $rc >"$OUT/$name.rc"
	echo "== $name: exit $rc"
}
fail=0
run() { "$@" || { echo "step failed: $*" >&2; fail=1; }; }
exported() { # exported CASE: keel export of the live host, keel vet of it, keel check against it
	local name=export-$1 rc=0
	"$KEEL" export -o "$OUT/$name.cue" 2>"$OUT/$name.err" || rc=$?
	[ "$rc" -eq 0 ] && { "$KEEL" vet "$OUT/$name.cue" >>"$OUT/$name.err" 2>&1 || rc=$?; }
	echo $rc >"$OUT/$name.vet"
	check "$name" "$OUT/$name.cue"
}

# 1. LVM's defaults, declared with the article's threads and 16M discards.
run stack_vdo_defaults "$nv"
exported vdo-defaults
check vdo-defaults-tuned "$D/vdo-defaults-tuned.cue"
check vdo-defaults-stacked "$D/vdo-defaults-stacked.cue"
"$KEEL" plan -c "$D/vdo-defaults-tuned.cue" --format json >"$OUT/vdo-defaults-tuned.plan.json"
stack_teardown "$nv" "$hd" "$ssd"

# 2. The split pool, grown onto the HDD (journal moves off the NVMe),
#    repaired with the pvmove keel plans, then grown on the NVMe again.
run stack_vdo_split "$nv" "$hd"
check vdo-split "$D/vdo-split.cue"
exported vdo-split
run lvextend -L +4G vdosplit/pool "$hd"
check vdo-split-grown "$D/vdo-split.cue"
exported vdo-split-grown
"$KEEL" plan -c "$D/vdo-split.cue" --format json >"$OUT/vdo-split-grown.plan.json"
# Run exactly the pvmove lines keel plan prints (no shell metacharacters in them).
"$KEEL" plan -c "$D/vdo-split.cue" | tee "$OUT/vdo-split-grown.plan" | sed -n 's/^    \$ \(pvmove .*\)$/\1/p' >/tmp/pvmove.cmds
while read -r -a argv; do
	[ ${#argv[@]} -gt 0 ] || continue
	echo "+ ${argv[*]}"; run "${argv[@]}"
done </tmp/pvmove.cmds
check vdo-split-moved "$D/vdo-split.cue"
run lvextend -L +2G vdosplit/pool "$nv"
check vdo-split-regrown "$D/vdo-split-regrown.cue"
stack_teardown "$nv" "$hd" "$ssd"

# 3. Thin pools: tpbad has 8M chunks and zeroing on.
run stack_thin "$nv"
check thin "$D/thin.cue"
exported thin
check audit-thin audit
stack_teardown "$nv" "$hd" "$ssd"

# 4. bcache with the article's tunables, then re-registered (defaults back).
run stack_bcache "$ssd" "$hd"
run bcache_tunables "$ssd"
cset=$(bcache_cset "$ssd"); uuid=$(cat /sys/block/bcache0/bcache/backing_dev_uuid)
sed -e "s/@BACKING@/$uuid/" -e "s/@CSET@/$cset/" "$D/bcache.cue.in" >/tmp/bcache.cue
check bcache-norule /tmp/bcache.cue
run "$KEEL" udev-rules -c /tmp/bcache.cue --write
check bcache /tmp/bcache.cue
exported bcache
# Without keel's rule the kernel's defaults come back at re-registration.
run rm /etc/udev/rules.d/70-keel-bcache.rules
run udevadm control --reload
run bcache_reregister "$ssd" "$hd"
check bcache-defaults /tmp/bcache.cue
stack_teardown "$nv" "$hd" "$ssd"

# 5. The article's thick stack: converged against its desired state.
run stack_vdo_thick "$nv"
check vdo-thick-norule "$D/vdo-thick.cue"
run "$KEEL" udev-rules -c "$D/vdo-thick.cue" --write
check vdo-thick "$D/vdo-thick.cue"
exported vdo-thick
"$KEEL" plan -c "$D/vdo-thick.cue" --format json >"$OUT/vdo-thick.plan.json"
# What a boot leaves without LVM_PVSCAN_ON_LVS: the VDO LV active, the VG on
# it not. Recorded as a node snapshot for the host-side tests too.
run vgchange -an vdovg
check vdo-thick-inactive "$D/vdo-thick.cue"
"$KEEL" snapshot -o "$OUT/vdo-thick-inactive.txtar"
stack_teardown "$nv" "$hd" "$ssd"
rm -f /etc/udev/rules.d/68-keel-pvscan-on-lvs.rules
exit $fail
`

// keel's udev rules files (reconcile/activation).
const (
	pvRule     = "/etc/udev/rules.d/68-keel-pvscan-on-lvs.rules"
	bcacheRule = "/etc/udev/rules.d/70-keel-bcache.rules"
)

// report is the part of keel check's JSON the test reads.
type report struct {
	Findings []struct {
		ID       string `json:"id"`
		Severity string `json:"severity"`
		Object   string `json:"object"`
	} `json:"findings"`
	Summary struct {
		OK bool `json:"ok"`
	} `json:"summary"`
}

// planAction is the part of one keel plan --format json action the test reads.
type planAction struct {
	ID       string     `json:"id"`
	Class    string     `json:"class"`
	Commands [][]string `json:"commands"`
	Remedies []string   `json:"remedies"`
}

// planActions reads the actions of a keel plan --format json output.
func planActions(t *testing.T, r *guest.Result, name string) []planAction {
	t.Helper()
	b, err := r.File(name)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Actions []planAction `json:"actions"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, b)
	}
	return p.Actions
}

// sorted returns a sorted copy of s.
func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

func TestCheckOnRealStacks(t *testing.T) {
	root := guest.RepoRoot(t)
	files := map[string][]byte{}
	read := func(rel, as string) {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		files[as] = b
	}
	read("e2e/scenarios/stacks.sh", "stacks.sh")
	for _, n := range []string{"vdo-defaults-tuned", "vdo-defaults-stacked", "vdo-split", "vdo-split-regrown", "thin", "vdo-thick"} {
		read("reconcile/plan/testdata/desired/"+n+".cue", "desired/"+n+".cue")
	}
	read("reconcile/plan/testdata/desired/bcache.cue.in", "desired/bcache.cue.in")
	r := guest.Run(t, guest.Spec{
		Disks: []guest.Disk{{Kind: guest.NVMe, Size: "64G", Serial: "nvme0"}, {Kind: guest.HDD, Size: "128G", Serial: "hdd1"},
			{Kind: guest.SSD, Size: "16G", Serial: "ssd2"}},
		Files: files, Keel: true, Script: script, Mem: "3G", Timeout: 15 * time.Minute,
	})
	t.Logf("guest wall time %s", r.Wall)
	r.RequireOK(t)

	cases := []struct {
		name string
		rc   int
		want []string // exact, sorted id@object keys
	}{
		{"vdo-defaults-tuned", 1, []string{"vdo.max_discard@vdodef/vdopool", "vdo.slab_remainder@vdodef/vdopool", "vdo.threads@vdodef/vdopool"}},
		{"vdo-defaults-stacked", 1, []string{"activation.udev_rule@udev:" + pvRule, "lvm.scan_lvs@vdostack", "vdo.slab_remainder@vdodef/vdopool", "vg.missing@vdostack"}},
		{"vdo-split", 0, []string{"vdo.slab_remainder@vdosplit/pool"}},
		{"vdo-split-grown", 1, []string{"vdo.layout.journal_off_fast@vdosplit/pool", "vdo.size@vdosplit/pool", "vdo.slab_remainder@vdosplit/pool"}},
		{"vdo-split-moved", 1, []string{"vdo.size@vdosplit/pool", "vdo.slab_remainder@vdosplit/pool"}},
		{"vdo-split-regrown", 0, []string{"vdo.slab_remainder@vdosplit/pool"}},
		{"thin", 1, []string{"thin.chunk_size@thinvg/tpbad", "thin.zeroing@thinvg/tpbad"}},
		// keel check --audit: the reference rules flag tpbad's 8M chunks
		// and its zeroing, and nothing about tp (512K, zeroing off).
		{"audit-thin", 1, []string{"thin.chunk_size@thinvg/tpbad", "thin.zeroing@thinvg/tpbad"}},
		{"bcache-norule", 1, []string{"bcache.udev_rule@udev:" + bcacheRule}},
		{"bcache", 0, []string{}},
		{"bcache-defaults", 1, nil}, // checked below: exactly one bcache.tunable, and the rule missing
		{"vdo-thick-norule", 1, []string{"activation.udev_rule@udev:" + pvRule, "vdo.slab_remainder@vdolab/vdopool"}},
		{"vdo-thick", 0, []string{"vdo.slab_remainder@vdolab/vdopool"}},
		// vdovg inactive after vgchange -an, nothing declared in it: what
		// Proxmox leaves after a boot, and nothing breaks (seed 000).
		{"vdo-thick-inactive", 0, []string{"vdo.slab_remainder@vdolab/vdopool"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rcb, err := r.File(c.name + ".rc")
			if err != nil {
				t.Fatal(err)
			}
			rc, err := strconv.Atoi(strings.TrimSpace(string(rcb)))
			if err != nil {
				t.Fatalf("keel check's exit status in %s.rc: %v", c.name, err)
			}
			js, err := r.File(c.name + ".json")
			if err != nil {
				t.Fatal(err)
			}
			var rep report
			if err := json.Unmarshal(js, &rep); err != nil {
				t.Fatalf("keel check output is not JSON: %v\n%s", err, js)
			}
			got := []string{}
			for _, f := range rep.Findings {
				got = append(got, f.ID+"@"+f.Object)
			}
			sort.Strings(got)
			if rc != c.rc {
				t.Errorf("exit %d, want %d; findings %q", rc, c.rc, got)
			}
			if c.want == nil {
				if len(got) != 2 || !strings.HasPrefix(got[0], "bcache.tunable@bcache:") || got[1] != "bcache.udev_rule@udev:"+bcacheRule {
					t.Errorf("findings %q, want exactly one bcache.tunable and the missing rule", got)
				}
				return
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("findings\n got %q\nwant %q", got, c.want)
			}
		})
	}
	// The plans: the defaults pool gets one maintenance action with the
	// article's settings, clearing the threads and discard findings; the
	// grown split pool one pvmove of the journal extents back to the NVMe;
	// the converged thick stack none.
	if acts := planActions(t, r, "vdo-defaults-tuned.plan.json"); len(acts) != 1 {
		t.Errorf("vdo-defaults-tuned plan: %d actions, want 1: %+v", len(acts), acts)
	} else {
		a := acts[0]
		settings := "logical_threads=4 physical_threads=4 hash_zone_threads=2 cpu_threads=3 bio_threads=2 ack_threads=1 max_discard=4096"
		if a.ID != "vdo.vdosettings:vdodef/vdopool" || a.Class != "maintenance" ||
			!slices.Equal(sorted(a.Remedies), []string{"vdo.max_discard@vdodef/vdopool", "vdo.threads@vdodef/vdopool"}) ||
			!slices.ContainsFunc(a.Commands, func(c []string) bool {
				return slices.Equal(c, []string{"lvchange", "--vdosettings", settings, "vdodef/vdopool"})
			}) {
			t.Errorf("vdo-defaults-tuned plan: %+v, want vdo.vdosettings:vdodef/vdopool (maintenance) running lvchange --vdosettings %q and clearing vdo.threads and vdo.max_discard", a, settings)
		}
	}
	if acts := planActions(t, r, "vdo-split-grown.plan.json"); len(acts) != 1 {
		t.Errorf("vdo-split-grown plan: %d actions, want 1: %+v", len(acts), acts)
	} else {
		a := acts[0]
		if a.ID != "vdo.layout.journal_off_fast:vdosplit/pool" || a.Class != "live" ||
			!slices.Equal(a.Remedies, []string{"vdo.layout.journal_off_fast@vdosplit/pool"}) || len(a.Commands) != 1 ||
			len(a.Commands[0]) != 5 || !slices.Equal(a.Commands[0][:3], []string{"pvmove", "-n", "vdosplit/pool_vdata"}) ||
			!strings.HasPrefix(a.Commands[0][4], "/dev/nvme") {
			t.Errorf("vdo-split-grown plan: %+v, want one live pvmove -n vdosplit/pool_vdata <slow extents> /dev/nvme... clearing vdo.layout.journal_off_fast", a)
		}
	}
	if acts := planActions(t, r, "vdo-thick.plan.json"); len(acts) != 0 {
		t.Errorf("plan for the converged vdo-thick stack: %d actions, want none: %+v", len(acts), acts)
	}
	if dir := os.Getenv("KEEL_CHECK_SNAPSHOT_DIR"); dir != "" {
		// Keep the inactive-VG capture for reconcile/plan/testdata/snapshots.
		b, err := r.File("vdo-thick-inactive.txtar")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "vdo-thick-inactive.txtar"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	checkExports(t, r)
	if !strings.Contains(r.Output, "+ pvmove -n vdosplit/pool_vdata ") {
		t.Errorf("the guest did not run keel's pvmove:\n%s", r.Output)
	}
}

// checkExports asserts, for each stack, that keel export of the live host
// passed keel vet and that keel check against it raises nothing at warning
// or above but keel's own udev rules (which the first keel apply installs)
// and the host's real problem where it has one: the grown split pool is
// exported as split, so its journal off the NVMe is still reported.
func checkExports(t *testing.T, r *guest.Result) {
	own := map[string]bool{"activation.udev_rule": true, "bcache.udev_rule": true}
	for _, c := range []struct{ name, problem string }{
		{"vdo-defaults", ""}, {"vdo-split", ""}, {"vdo-split-grown", "vdo.layout.journal_off_fast@vdosplit/pool"},
		{"thin", ""}, {"bcache", ""}, {"vdo-thick", ""},
	} {
		t.Run("export-"+c.name, func(t *testing.T) {
			name := "export-" + c.name
			vet, err := r.File(name + ".vet")
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(string(vet)) != "0" {
				msg, _ := r.File(name + ".err")
				t.Fatalf("keel export or keel vet of it failed (rc %s): %s", strings.TrimSpace(string(vet)), msg)
			}
			js, err := r.File(name + ".json")
			if err != nil {
				t.Fatal(err)
			}
			var rep report
			if err := json.Unmarshal(js, &rep); err != nil {
				t.Fatalf("keel check output is not JSON: %v\n%s", err, js)
			}
			seen := false
			for _, f := range rep.Findings {
				key := f.ID + "@" + f.Object
				switch {
				case key == c.problem:
					seen = true
				case f.Severity == "info" || own[f.ID]:
				default:
					t.Errorf("check against the host's own export: %s %s", f.Severity, key)
				}
			}
			if c.problem != "" && !seen {
				t.Errorf("the export hides the host's problem %s", c.problem)
			}
			if t.Failed() {
				cue, _ := r.File(name + ".cue")
				t.Logf("export:\n%s", cue)
			}
		})
	}
}
