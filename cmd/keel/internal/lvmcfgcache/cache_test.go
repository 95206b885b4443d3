package lvmcfgcache

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
)

// fakeLVM answers lvmconfig with the bytes of lvm.conf under root, as a
// stand-in for LVM's merged view, and counts its runs.
type fakeLVM struct {
	root   string
	runs   atomic.Int32
	exit   int
	stderr string
	during func() // runs while "lvmconfig" runs
}

func (f *fakeLVM) Run(_ context.Context, c hostio.Cmd) (hostio.Result, error) {
	f.runs.Add(1)
	if f.during != nil {
		f.during()
	}
	b, _ := os.ReadFile(filepath.Join(f.root, "etc/lvm/lvm.conf"))
	return hostio.Result{Stdout: append([]byte(c.String()+"\n"), b...), Stderr: []byte(f.stderr), ExitCode: f.exit}, nil
}

type host struct {
	t    *testing.T
	root string
	env  []string
	lvm  *fakeLVM
	r    *Runner
}

func newHost(t *testing.T) *host {
	root := t.TempDir()
	h := &host{t: t, root: root, env: []string{"PATH=/usr/sbin", "LANG=C"}}
	h.write("etc/lvm/lvm.conf", "devices { scan_lvs = 0 }\n")
	h.write("proc/sys/kernel/hostname", "pve1\n")
	h.write("proc/sys/kernel/random/boot_id", "b1\n")
	h.write("usr/sbin/lvm", "binary\n")
	h.lvm = &fakeLVM{root: root}
	h.r = &Runner{Inner: h.lvm, Dir: filepath.Join(t.TempDir(), "cache"), Root: root,
		Environ:  func() []string { return h.env },
		LookPath: func(string) (string, error) { return "/usr/sbin/lvm", nil }}
	return h
}

func (h *host) write(name, data string) {
	p := filepath.Join(h.root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// config runs the probe's lvmconfig and reports whether lvmconfig ran.
func (h *host) config() (string, bool) {
	h.t.Helper()
	before := h.lvm.runs.Load()
	res, err := h.r.Run(context.Background(), probes.LVMConfigCmd())
	if err != nil {
		h.t.Fatal(err)
	}
	return string(res.Stdout), h.lvm.runs.Load() > before
}

func TestAnsweredUntilAnInputChanges(t *testing.T) {
	h := newHost(t)
	first, ran := h.config()
	if !ran {
		t.Fatal("first run: answered without lvmconfig")
	}
	if again, ran := h.config(); ran || again != first {
		t.Fatalf("nothing changed: ran %v, output %q, want %q from the cache", ran, again, first)
	}
	for _, c := range []struct {
		what   string
		change func()
	}{
		{"lvm.conf edited", func() { h.write("etc/lvm/lvm.conf", "devices { scan_lvs = 1 }\n") }},
		{"lvmlocal.conf added", func() { h.write("etc/lvm/lvmlocal.conf", "local { }\n") }},
		{"a host tag file added", func() { h.write("etc/lvm/lvm_pve1.conf", "devices { }\n") }},
		{"a host tag file edited", func() { h.write("etc/lvm/lvm_pve1.conf", "devices { x = 1 }\n") }},
		{"the hostname changed", func() { h.write("proc/sys/kernel/hostname", "pve2\n") }},
		{"a reboot", func() { h.write("proc/sys/kernel/random/boot_id", "b2\n") }},
		{"an LVM variable set", func() { h.env = append(h.env, "LVM_SUPPRESS_FD_WARNINGS=1") }},
		{"LVM_SYSTEM_DIR moved", func() {
			h.write("opt/lvm/lvm.conf", "global { }\n")
			h.env = append(h.env, "LVM_SYSTEM_DIR=/opt/lvm")
		}},
		{"the lvm binary upgraded", func() {
			h.write("usr/sbin/lvm", "binary 2\n")
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(filepath.Join(h.root, "usr/sbin/lvm"), later, later); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		c.change()
		if _, ran := h.config(); !ran {
			t.Errorf("%s: answered from the cache", c.what)
		}
		if _, ran := h.config(); ran {
			t.Errorf("%s, then nothing: lvmconfig ran again", c.what)
		}
	}
}

// With LVM_COMMAND_PROFILE set, lvmconfig shows the command profile at the
// front of LVM's config cascade (lvmconfig(8), --mergedconfig): its answer
// then depends on a profile file the key does not hash, so it is never
// answered from the cache.
func TestCommandProfileRunsLVMConfig(t *testing.T) {
	h := newHost(t)
	h.env = append(h.env, "LVM_COMMAND_PROFILE=lvmdbusd")
	h.write("etc/lvm/profile/lvmdbusd.profile", "report { output_format = \"json\" }\n")
	if _, ran := h.config(); !ran {
		t.Fatal("first run: answered without lvmconfig")
	}
	h.write("etc/lvm/profile/lvmdbusd.profile", "report { output_format = \"basic\" }\n")
	if _, ran := h.config(); !ran {
		t.Error("the command profile edited: answered from the cache")
	}
	if entries, _ := os.ReadDir(h.r.Dir); len(entries) > 0 {
		t.Errorf("an answer under a command profile was stored: %d entries", len(entries))
	}
}

func TestStoredOnlyWhenClean(t *testing.T) {
	h := newHost(t)
	h.lvm.exit = 5
	h.config()
	if _, ran := h.config(); !ran {
		t.Error("exit 5 was stored")
	}
	h.lvm.exit, h.lvm.stderr = 0, "WARNING: something\n"
	h.config()
	if _, ran := h.config(); !ran {
		t.Error("an answer with stderr was stored")
	}
	// lvm.conf edited while lvmconfig ran: the answer may be of either
	// content, so it is not stored under the one read before.
	h.lvm.stderr = ""
	n := 0
	h.lvm.during = func() { n++; h.write("etc/lvm/lvm.conf", "devices { scan_lvs = "+string(rune('0'+n))+" }\n") }
	h.config()
	h.lvm.during = nil
	if _, ran := h.config(); !ran {
		t.Error("an answer read across an edit was stored")
	}
}

func TestOtherCommandsAndForeignEntries(t *testing.T) {
	h := newHost(t)
	other := hostio.Cmd{Name: "lvmconfig", Args: []string{"--validate"}}
	for range 2 {
		before := h.lvm.runs.Load()
		if _, err := h.r.Run(context.Background(), other); err != nil || h.lvm.runs.Load() != before+1 {
			t.Fatalf("%s: not passed through (err %v)", other, err)
		}
	}
	h.config()
	ents, err := os.ReadDir(h.r.Dir)
	if err != nil || len(ents) != 1 {
		t.Fatalf("cache dir: %v, %d entries", err, len(ents))
	}
	p := filepath.Join(h.r.Dir, ents[0].Name())
	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, ran := h.config(); !ran {
		t.Error("an entry others may write was used")
	}
	if err := os.WriteFile(p, []byte("not ours\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ran := h.config(); !ran {
		t.Error("an entry without the format line was used")
	}
}

// streamingLVM is fakeLVM that streams (Cmd.Consume) and counts how often
// it did.
type streamingLVM struct {
	*fakeLVM
	streamed int
}

func (s *streamingLVM) Run(ctx context.Context, c hostio.Cmd) (hostio.Result, error) {
	res, err := s.fakeLVM.Run(ctx, c)
	if c.Consume != nil {
		s.streamed++
		c.Consume(func() ([]byte, bool) { return res.Stdout, true })
	}
	return res, err
}

// TestRunStream: the cache passes streaming (Cmd.Consume) on to the runner below it for
// every command but lvmconfig, which it answers as Run does, consume
// getting the answer.
func TestRunStream(t *testing.T) {
	h := newHost(t)
	inner := &streamingLVM{fakeLVM: h.lvm}
	h.r.Inner = inner
	stream := func(c hostio.Cmd) string {
		var got []byte
		c.Consume = func(next func() ([]byte, bool)) { got, _ = next() }
		if _, err := h.r.Run(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		return string(got)
	}
	report := hostio.Cmd{Name: "lvm", Args: []string{"fullreport"}}
	if got := stream(report); inner.streamed != 1 || got != report.String()+"\ndevices { scan_lvs = 0 }\n" {
		t.Fatalf("report: streamed %d times below, consume got %q", inner.streamed, got)
	}
	want := probes.LVMConfigCmd().String() + "\ndevices { scan_lvs = 0 }\n"
	for i := range 2 {
		runs := h.lvm.runs.Load()
		if got := stream(probes.LVMConfigCmd()); got != want {
			t.Fatalf("lvmconfig %d: consume got %q", i, got)
		}
		if ran := h.lvm.runs.Load() > runs; ran != (i == 0) {
			t.Fatalf("lvmconfig %d: ran %v", i, ran)
		}
	}
	if inner.streamed != 1 {
		t.Fatalf("lvmconfig streamed below the cache (%d)", inner.streamed)
	}
}

// Two probes that ask at once on a miss (keel activate's warm-up and its
// first activation report, both at boot when the boot ID makes every entry
// stale) share one lvmconfig; a run whose answer cannot be stored is not
// shared, and each waiter runs its own.
func TestConcurrentMissesShareOneRun(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stderr   string
		wantRuns int32
	}{
		{"clean answer shared", "", 1},
		{"answer with stderr not shared", "WARNING: something\n", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t)
			h.lvm.stderr = tc.stderr
			synctest.Test(t, func(t *testing.T) {
				started := make(chan struct{}, 2)
				release := make(chan struct{})
				h.lvm.during = func() {
					started <- struct{}{}
					<-release
				}
				var wg sync.WaitGroup
				outs := make([]string, 2)
				run := func(i int) {
					wg.Go(func() {
						res, err := h.r.Run(context.Background(), probes.LVMConfigCmd())
						if err != nil {
							t.Error(err)
						}
						outs[i] = string(res.Stdout)
					})
				}
				run(0)
				<-started // the first lvmconfig runs
				run(1)
				synctest.Wait() // the second caller is blocked, in lvmconfig or on the first
				close(release)
				wg.Wait()
				if outs[0] != outs[1] || outs[0] == "" {
					t.Errorf("answers differ or are empty: %q, %q", outs[0], outs[1])
				}
			})
			if got := h.lvm.runs.Load(); got != tc.wantRuns {
				t.Errorf("lvmconfig ran %d times, want %d", got, tc.wantRuns)
			}
		})
	}
}
