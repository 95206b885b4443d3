package wipe

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/plan/removal"
)

// blkid-pvhold.txt and blkid-fsdisk.txt were recorded by e2e/wipe/reuse.sh
// in the test guest (KEEL_WIPE_SNAPSHOT_DIR) with node-deps.txtar: vmdata/
// pvhold carries the PV of the VG upper that LVM does not list (scan_lvs=0),
// and vmdata/fsdisk holds ext4.

// blkidRunner answers blkid -p with a captured output per device path.
type blkidRunner struct {
	out  map[string][]byte
	code map[string]int
	err  error
	ran  []string
}

func (b *blkidRunner) Run(_ context.Context, c hostio.Cmd) (hostio.Result, error) {
	b.ran = append(b.ran, c.String())
	if b.err != nil {
		return hostio.Result{ExitCode: -1}, b.err
	}
	dev := c.Args[len(c.Args)-1]
	if c.Name != "blkid" || !reflect.DeepEqual(c.Args[:len(c.Args)-1], []string{"-p", "-o", "export"}) {
		return hostio.Result{ExitCode: 1, Stderr: []byte("unexpected command")}, nil
	}
	return hostio.Result{Stdout: b.out[dev], ExitCode: b.code[dev]}, nil
}

func readCapture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCheckContent(t *testing.T) {
	run := &blkidRunner{
		out:  map[string][]byte{"vmdata/pvhold": readCapture(t, "blkid-pvhold.txt"), "vmdata/fsdisk": readCapture(t, "blkid-fsdisk.txt")},
		code: map[string]int{"vmdata/blank": blkidNothing, "vmdata/two": blkidAmbivalent, "vmdata/gone": 4},
	}
	ex := &fakeExec{}
	r := testRemover(t, ex, nil)
	tg := func(lv string, active bool) removal.Target {
		return removal.Target{VG: "vmdata", LV: lv, Active: active}
	}
	for _, c := range []struct {
		t    removal.Target
		want string // "" = passes
		cmds []string
	}{
		{tg("pvhold", true), "LVM2_member signature", nil},
		{tg("fsdisk", true), "", nil},
		{tg("blank", true), "", nil},
		{tg("two", true), "several signatures", nil},
		{tg("gone", true), "cannot read its content", nil},
		{tg("pvhold", false), "lvchange --activate y vmdata/pvhold && wipefs --all vmdata/pvhold", []string{
			"lvchange --activate y --ignoreactivationskip vmdata/pvhold", "lvchange --activate n vmdata/pvhold"}},
		{tg("fsdisk", false), "", []string{"lvchange --activate y --ignoreactivationskip vmdata/fsdisk"}},
		{removal.Target{VG: "vmdata", LV: "pvhold", Resume: true}, "", nil}, // keel began clearing it: not read
	} {
		ex.argvs = nil
		err := r.CheckContent(context.Background(), run, []removal.Target{c.t})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: refused: %v", c.t, err)
		case c.want != "" && (!errors.Is(err, removal.ErrRefused) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "lv "+c.t.Name())):
			t.Errorf("%+v: got %v, want a refusal of %s containing %q", c.t, err, c.t.Name(), c.want)
		}
		if !reflect.DeepEqual(ex.argvs, c.cmds) {
			t.Errorf("%+v: commands %q, want %q", c.t, ex.argvs, c.cmds)
		}
	}
	run.err = errors.New("exec: \"blkid\": executable file not found in $PATH")
	if err := r.CheckContent(context.Background(), run, []removal.Target{tg("fsdisk", true)}); !errors.Is(err, removal.ErrRefused) {
		t.Errorf("blkid missing: %v, want a refusal", err)
	}
}

func TestSignatureLayer(t *testing.T) {
	for _, c := range []struct {
		sig   Signature
		layer bool
	}{
		{Signature{"TYPE": "LVM2_member", "USAGE": "raid"}, true},
		{Signature{"TYPE": "crypto_LUKS", "USAGE": "crypto"}, true},
		{Signature{"TYPE": "bcache", "USAGE": "other"}, true},
		{Signature{"TYPE": "swap", "USAGE": "other"}, true},
		{Signature{"TYPE": "zfs_member", "USAGE": "filesystem"}, true},
		{Signature{"TYPE": "weird"}, true},
		{Signature{"TYPE": "ext4", "USAGE": "filesystem"}, false},
		{Signature{"PTTYPE": "gpt", "PTUUID": "x"}, false},
		{nil, false},
	} {
		if got := c.sig.layer(); got != c.layer {
			t.Errorf("%v: layer %v, want %v", c.sig, got, c.layer)
		}
	}
}
