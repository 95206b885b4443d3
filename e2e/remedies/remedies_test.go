//go:build e2e

package remedies

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// ids are the findings whose remedies the test runs, in the order it runs
// them: the grow first, since the slab count it changes feeds the thick
// limit (overcommit) and the audit's thread layout.
var ids = []string{"vdo.slab_remainder", "vdo.overcommit", "vdo.threads", "vdo.max_discard"}

// setup is the first boot: a 10G VDO pool with LVM's defaults (max_discard
// 1, ten threads) and a 20G VDO LV (above the 6G the pool holds thick, and
// 1.28g of slab remainder), a VG stacked on the VDO LV with one active LV
// (a VM disk), and keel check --audit.
const setup = `set -u
. /mnt/host/stacks.sh
nv=$(disk nvme0) || exit 2
lvm_conf_article || exit 3
step pvcreate -q "$nv" || exit 4
step vgcreate -q vg "$nv" || exit 4
step lvcreate -y --type vdo -L 10G -V 20G -n vdolv vg/vdopool || exit 5
step pvcreate -q /dev/vg/vdolv || exit 6
step vgcreate -q upper /dev/vg/vdolv || exit 6
step lvcreate -y -q -L 1G -n vm-100-disk-0 upper || exit 6
rc=0
"$KEEL" check --audit --format json >"$OUT/before.json" || rc=$?
echo "keel check exit $rc"
"$KEEL" check --audit || true
`

// restore brings the second boot to the first one's state (the fast guest
// keeps only its disks: lvm.conf and activation are rebuilt).
const restore = `set -u
. /mnt/host/stacks.sh
lvm_conf_article || exit 3
step vgchange -ay vg || exit 4
step vgchange -ay upper || exit 4
"$KEEL" check --audit --format json >"$OUT/again.json"
`

type report struct {
	Findings []struct {
		ID     string `json:"id"`
		Object string `json:"object"`
		Remedy string `json:"remedy"`
	} `json:"findings"`
}

func readReport(t *testing.T, r *guest.Result, name string) report {
	t.Helper()
	b, err := r.File(name)
	if err != nil {
		t.Fatalf("%v; output tail:\n%s", err, r.Output)
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, b)
	}
	return rep
}

// raised returns the objects that carry finding id.
func (rep report) raised(id string) []string {
	var out []string
	for _, f := range rep.Findings {
		if f.ID == id {
			out = append(out, f.Object)
		}
	}
	return out
}

// heredoc quotes s for a bash script byte for byte (a quoted here-document
// expands nothing).
func heredoc(s string) string {
	const eof = "KEEL_REMEDY_EOF"
	if strings.Contains(s, eof) {
		panic("remedy contains the here-document delimiter")
	}
	return "<<'" + eof + "'\n" + s + "\n" + eof + "\n"
}

func TestRemediesWorkAsPrinted(t *testing.T) {
	stacks, err := os.ReadFile(filepath.Join(guest.RepoRoot(t), "e2e", "scenarios", "stacks.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := guest.New(t, guest.Spec{
		Disks:   []guest.Disk{{Kind: guest.NVMe, Size: "20G", Serial: "nvme0"}},
		Keel:    true,
		Files:   map[string][]byte{"stacks.sh": stacks},
		Timeout: 6 * time.Minute,
	})
	first := m.Boot(t, setup)
	first.RequireOK(t)
	t.Logf("setup boot: %s", first.Wall.Round(time.Second))
	before := readReport(t, first, "before.json")
	remedy := map[string]string{}
	for _, id := range ids {
		var got []string
		for _, f := range before.Findings {
			if f.ID == id {
				got = append(got, f.Object)
				remedy[id] = f.Remedy
			}
		}
		if len(got) != 1 {
			t.Fatalf("keel check --audit raised %s on %v, want one object; output:\n%s", id, got, first.Output)
		}
		t.Logf("%s on %s: remedy %q", id, got[0], remedy[id])
	}

	// Second boot: each remedy exactly as printed, then keel check again.
	var b strings.Builder
	b.WriteString(restore)
	for i, id := range ids {
		fmt.Fprintf(&b, "echo '== %s'\ncat >/tmp/remedy%d.sh %s", id, i, heredoc(remedy[id]))
		fmt.Fprintf(&b, "cat /tmp/remedy%d.sh\nrc=0\nbash /tmp/remedy%d.sh </dev/null || rc=$?\necho $rc >\"$OUT/%s.rc\"\necho \"remedy exit $rc\"\n", i, i, id)
		fmt.Fprintf(&b, "\"$KEEL\" check --audit --format json >\"$OUT/%s.json\"\n", id)
	}
	b.WriteString("\"$KEEL\" check --audit || true\nlvs -a -o lv_name,lv_size,lv_attr vg upper\nexit 0\n")
	second := m.Boot(t, b.String())
	second.RequireOK(t)
	t.Logf("remedy boot: %s", second.Wall.Round(time.Second))
	again := readReport(t, second, "again.json")
	for _, id := range ids {
		if len(again.raised(id)) != 1 {
			t.Fatalf("after the reboot keel check raised %s on %v, want the first boot's state; output:\n%s", id, again.raised(id), second.Output)
		}
	}
	for _, id := range ids {
		rc, err := second.File(id + ".rc")
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(string(rc)) != "0" {
			t.Errorf("remedy of %s exited %s:\n%s", id, strings.TrimSpace(string(rc)), remedy[id])
		}
		after := readReport(t, second, id+".json")
		if objs := after.raised(id); len(objs) != 0 {
			t.Errorf("after its remedy keel check still raises %s on %v", id, objs)
		}
	}
	if t.Failed() {
		t.Logf("remedy boot output:\n%s", second.Output)
	}
}
