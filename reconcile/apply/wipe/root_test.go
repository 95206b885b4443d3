package wipe

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-storage/keel/internal/testenv"
	"github.com/keel-storage/keel/reconcile/plan/removal"
	"golang.org/x/sys/unix"
)

// loopDevice attaches a file of size bytes filled with random data to a
// free loop device and detaches it when the test ends.
func loopDevice(t *testing.T, size int) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "loop.img")
	buf := make([]byte, size)
	rand.Read(buf)
	if err := os.WriteFile(img, buf, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "-f", "--show", img).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", dev, err, out)
		}
	})
	return dev
}

func readDev(t *testing.T, dev string) []byte {
	t.Helper()
	f, err := os.OpenFile(dev, os.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []byte
	// O_DIRECT needs an aligned buffer; a slice from mmap is page-aligned.
	buf, err := unix.Mmap(-1, 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(buf)
	for {
		n, err := f.Read(buf)
		out = append(out, buf[:n]...)
		if n == 0 || err != nil {
			return out
		}
	}
}

func TestRootLoopZeroOutAndDiscard(t *testing.T) {
	testenv.NeedRoot(t, "loop devices")
	for _, mode := range []removal.Mode{removal.ModeZeroOut, removal.ModeDiscard} {
		t.Run(string(mode), func(t *testing.T) {
			const size = 24 << 20
			dev := loopDevice(t, size)
			if b := readDev(t, dev); bytes.Count(b, []byte{0}) > size/100 {
				t.Fatalf("%s: random data reads mostly zero before the wipe", dev)
			}
			ql, err := ReadQueueLimits("/sys", dev)
			if err != nil {
				t.Fatal(err)
			}
			step, notes, err := StepFor(mode, 4<<20, ql)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: limits %+v, step %d, notes %q", dev, ql, step, notes)
			d, err := OpenBlock(dev)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if _, err := OpenBlock(dev); !errors.Is(err, unix.EBUSY) {
				t.Fatalf("second exclusive open of %s: got %v, want EBUSY", dev, err)
			}
			var p Progress
			if err := Wipe(context.Background(), dev, d, mode, step, &p); err != nil {
				t.Fatal(err)
			}
			if s := p.Stat(); s.Done != size || !p.Done() {
				t.Fatalf("progress %+v", s)
			}
			b := readDev(t, dev)
			if len(b) != size {
				t.Fatalf("read %d bytes back, want %d", len(b), size)
			}
			if i := bytes.IndexFunc(b, func(r rune) bool { return r != 0 }); i >= 0 {
				t.Fatalf("%s: byte %d not zero after %s", dev, i, mode)
			}
		})
	}
}

func TestRootOpenBlockRefusesRegularFile(t *testing.T) {
	testenv.NeedRoot(t, "loop devices")
	f := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenBlock(f); err == nil || !strings.Contains(err.Error(), "not a block device") {
		t.Fatalf("got %v", err)
	}
}
