package hostio

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/keel-storage/keel/probes/internal/dmioctl"
)

// TestDMIoctlGuest runs only inside the test guest (e2e/probes ships this
// package's test binary there and sets KEEL_DM_GUEST_OUT): for `dmsetup
// table`, `dmsetup status` and `dmsetup message <vdo> 0 stats` it requires
// the in-process ioctl output to equal the real dmsetup's, byte for byte,
// and writes dmsetup's output with the raw ioctl replies under the
// directory for the replay tests (probes/testdata/dmioctl).
func TestDMIoctlGuest(t *testing.T) {
	out := os.Getenv("KEEL_DM_GUEST_OUT")
	if out == "" {
		t.Skip("runs in the test guest only (KEEL_DM_GUEST_OUT unset)")
	}
	f, err := os.OpenFile(dmioctl.Control, os.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	live := dmioctl.IoctlCaller(f.Fd())
	exec := ExecRunner{}
	check := func(dir string, c Cmd, kind, dev string) []byte {
		t.Helper()
		raw := map[string][]byte{}
		rec := func(req uint32, version [3]uint32, name string, flags uint32, payload []byte) ([]byte, error) {
			b, err := live(req, version, name, flags, payload)
			if err == nil {
				rep, perr := dmioctl.ParseReply(b)
				if perr != nil {
					return nil, perr
				}
				key := name
				if req == dmioctl.IoctlListDevices {
					key = "list"
				}
				raw[key] = bytes.Clone(b[:dmioctl.HeaderSize+len(rep.Data)]) // b is reused by the next call
			}
			return b, err
		}
		// dmsetup before and after: a counter that moved in between
		// must not fail the comparison, a format difference must.
		before, err := exec.Run(context.Background(), c)
		if err != nil || before.ExitCode != 0 {
			t.Fatalf("%s: %v exit %d: %s", c, err, before.ExitCode, before.Stderr)
		}
		got, err := dmioctl.Format(rec, kind, dev)
		if err != nil {
			t.Fatalf("%s by ioctl: %v", c, err)
		}
		after, err := exec.Run(context.Background(), c)
		if err != nil || after.ExitCode != 0 {
			t.Fatalf("%s: %v exit %d: %s", c, err, after.ExitCode, after.Stderr)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		want := before.Stdout
		if !bytes.Equal(got, want) {
			want = after.Stdout
		}
		if !bytes.Equal(got, want) {
			_ = os.WriteFile(filepath.Join(dir, "ioctl.out"), got, 0o644)
			_ = os.WriteFile(filepath.Join(dir, "dmsetup.out"), before.Stdout, 0o644)
			t.Errorf("%s: ioctl output differs from dmsetup's\n--- dmsetup\n%s--- ioctl\n%s", c, before.Stdout, got)
			return before.Stdout
		}
		if len(before.Stderr)+len(after.Stderr) > 0 {
			t.Errorf("%s: dmsetup wrote to stderr, the ioctl path does not: %q", c, before.Stderr)
		}
		if err := os.WriteFile(filepath.Join(dir, "dmsetup.out"), want, 0o644); err != nil {
			t.Fatal(err)
		}
		for k, b := range raw {
			if err := os.WriteFile(filepath.Join(dir, k+".bin"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// The runner the probe pass uses must serve it in-process and
		// print the same.
		r := &DMRunner{Exec: exec}
		res, err := r.Run(context.Background(), c)
		if err != nil || r.Stats().Ioctl != 1 || r.Stats().Exec != 0 {
			t.Errorf("%s: DMRunner: %v, stats %+v", c, err, r.Stats())
		}
		if !bytes.Equal(res.Stdout, before.Stdout) && !bytes.Equal(res.Stdout, after.Stdout) {
			t.Errorf("%s: DMRunner output differs from dmsetup's:\n%s", c, res.Stdout)
		}
		return want
	}
	tables := check(filepath.Join(out, "table"), dmTableCmd, "table", "")
	check(filepath.Join(out, "status"), dmStatusCmd, "status", "")
	for _, line := range strings.Split(string(tables), "\n") {
		name, rest, ok := strings.Cut(line, ": ")
		if f := strings.Fields(rest); ok && len(f) >= 3 && f[2] == "vdo" {
			c := Cmd{Name: "dmsetup", Args: []string{"message", name, "0", "stats"}}
			check(filepath.Join(out, "message-"+name), c, "message", name)
		}
	}
}
