//go:build e2e

package probes_e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/keel-storage/keel/e2e/guest"
)

// dmScript builds each stack and runs probes/hostio's guest test
// (TestDMIoctlGuest) on it: the in-process device-mapper ioctls must print
// what dmsetup table, dmsetup status and dmsetup message <vdo> 0 stats
// print, byte for byte.
const dmScript = prelude + `cmp_dm() { # cmp_dm NAME
	KEEL_DM_GUEST_OUT="$OUT/dm/$1" /mnt/host/hostio.test -test.run '^TestDMIoctlGuest$' -test.v -test.count 1 \
		>"$OUT/dm-$1.log" 2>&1 || { cat "$OUT/dm-$1.log"; echo "dm ioctl $1 differs"; exit 1; }
	grep -q '^--- PASS: TestDMIoctlGuest' "$OUT/dm-$1.log" || { cat "$OUT/dm-$1.log"; exit 1; }
	echo "dm ioctl $1: identical"
}
cmp_dm empty
stack_vdo_thick "$nv" && cmp_dm vdo-stacked || exit 1
stack_teardown "$nv" "$hd" "$ssd"
stack_vdo_split "$nv" "$hd" && cmp_dm vdo-split || exit 1
stack_teardown "$nv" "$hd" "$ssd"
stack_thin "$nv" && cmp_dm thin || exit 1
stack_teardown "$nv" "$hd" "$ssd"
stack_bcache "$ssd" "$hd" && step pvcreate -q /dev/bcache0 && step vgcreate -q bcvg /dev/bcache0 &&
	step lvcreate -y -q -L 1G -n lv0 bcvg && cmp_dm bcache || exit 1
stack_teardown "$nv" "$hd" "$ssd"
# A device without a table, a zero target and dm-crypt (whose key dmsetup
# hides behind zeroes); trixie's kernel has the first cipher, so a crypt
# device that cannot be made fails the scenario.
step dmsetup create keel-notable --notable && step dmsetup create keel-zero --table "0 2048 zero" || exit 1
for cipher in aes-xts-plain64 aes-cbc-essiv:sha256 aes-cbc-plain; do
	dmsetup create keel-crypt --table "0 2048 crypt $cipher $(printf '%064d' 7) 0 /dev/mapper/keel-zero 0" &&
		echo "crypt: $cipher" && break
done
dmsetup table keel-crypt >/dev/null || { echo "crypt: the guest kernel loads none of the ciphers"; exit 1; }
cmp_dm misc || exit 1
exit 0
`

// TestDMIoctlMatchesDmsetup runs dmScript in the guest. With
// KEEL_DM_CAPTURE=1 it copies what the guest wrote (dmsetup's output and
// the raw ioctl replies) to probes/testdata/dmioctl for the unit tests.
func TestDMIoctlMatchesDmsetup(t *testing.T) {
	root := guest.RepoRoot(t)
	bin := filepath.Join(t.TempDir(), "hostio.test")
	build := exec.Command("go", "test", "-c", "-o", bin, "./probes/hostio")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c ./probes/hostio: %v\n%s", err, out)
	}
	testBin, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	r := runStacks(t, dmScript, map[string][]byte{"hostio.test": testBin})
	stacksSeen := map[string]bool{}
	for _, f := range r.Files() {
		if rest, ok := strings.CutPrefix(filepath.ToSlash(f), "dm/"); ok && strings.HasSuffix(rest, "/dmsetup.out") {
			stacksSeen[strings.SplitN(rest, "/", 2)[0]] = true
		}
	}
	for _, s := range []string{"empty", "vdo-stacked", "vdo-split", "thin", "bcache", "misc"} {
		if !stacksSeen[s] || !strings.Contains(r.Output, "dm ioctl "+s+": identical") {
			t.Errorf("stack %s: no byte-identical comparison recorded", s)
		}
	}
	// The misc stack compared a dm-crypt table (the key hidden by dmsetup).
	if !regexp.MustCompile(`(?m)^crypt: aes-`).MatchString(r.Output) {
		t.Errorf("misc: no dm-crypt device was compared:\n%s", r.Output)
	}
	// Each VDO stack must have compared the stats message too.
	for _, s := range []string{"vdo-stacked", "vdo-split"} {
		found := false
		for _, f := range r.Files() {
			found = found || strings.HasPrefix(filepath.ToSlash(f), "dm/"+s+"/message-")
		}
		if !found {
			t.Errorf("stack %s: no dmsetup message stats compared", s)
		}
	}
	if os.Getenv("KEEL_DM_CAPTURE") == "1" {
		dst := filepath.Join(root, "probes", "testdata", "dmioctl")
		if err := os.RemoveAll(dst); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(dst, os.DirFS(filepath.Join(r.Dir, "out", "dm"))); err != nil {
			t.Fatal(err)
		}
		t.Logf("captured into %s", dst)
	}
}
