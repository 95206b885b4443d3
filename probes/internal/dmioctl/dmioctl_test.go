package dmioctl

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dmCaptures lists the captured command directories under
// testdata/dmioctl/<stack>/<command>: dmsetup.out is what the real dmsetup
// printed in the test guest, list.bin and <device>.bin the kernel's ioctl
// replies (header and data area) at the same moment (e2e/probes,
// TestDMIoctlMatchesDmsetup with KEEL_DM_CAPTURE=1).
func dmCaptures(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("..", "..", "testdata", "dmioctl", "*", "*", "dmsetup.out"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no captures under testdata/dmioctl")
	}
	for i, d := range dirs {
		dirs[i] = filepath.Dir(d)
	}
	return dirs
}

// replayCaller answers from the replies captured in dir and checks each
// request has the flags dmsetup would send for kind.
func replayCaller(t *testing.T, dir, kind string) Caller {
	return func(req uint32, version [3]uint32, name string, flags uint32, payload []byte) ([]byte, error) {
		file := name
		switch req {
		case IoctlListDevices:
			file = "list"
		case dmIoctlTableStatus:
			if table := flags&dmFlagStatusTable != 0; table != (kind == "table") {
				t.Errorf("%s: %s of %s sent with flags %#x", dir, kind, name, flags)
			}
			// A status read never commits a pool's metadata.
			if noflush := flags&dmFlagNoFlush != 0; noflush != (kind == "status") {
				t.Errorf("%s: %s of %s sent with flags %#x: DM_NOFLUSH_FLAG only and always for status", dir, kind, name, flags)
			}
		case dmIoctlTargetMsg:
			if kind != "message" || !bytes.Equal(payload[8:], []byte("stats\x00")) || version != dmVersionMsg4 {
				t.Errorf("%s: message request %q version %v", dir, payload, version)
			}
		}
		return os.ReadFile(filepath.Join(dir, file+".bin"))
	}
}

func captureKind(dir string) (kind, dev string) {
	base := filepath.Base(dir)
	if d, ok := strings.CutPrefix(base, "message-"); ok {
		return "message", d
	}
	return base, ""
}

// TestDMFormatMatchesCapturedDmsetup formats the captured ioctl replies of
// every stack and requires dmsetup's captured output, byte for byte.
func TestDMFormatMatchesCapturedDmsetup(t *testing.T) {
	seen := map[string]bool{}
	for _, dir := range dmCaptures(t) {
		kind, dev := captureKind(dir)
		seen[kind] = true
		want, err := os.ReadFile(filepath.Join(dir, "dmsetup.out"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Format(replayCaller(t, dir, kind), kind, dev)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: formatted replies differ from dmsetup\n--- dmsetup\n%s--- ioctl\n%s", dir, want, got)
		}
	}
	for _, k := range []string{"table", "status", "message"} {
		if !seen[k] {
			t.Errorf("no capture of %s", k)
		}
	}
}

// TestDMFormatWithOneBuffer replays the captures through one buffer that
// every call overwrites, as IoctlCaller's calls share one: what Format
// returns must not hold any reply but the last (Caller's contract).
func TestDMFormatWithOneBuffer(t *testing.T) {
	for _, dir := range dmCaptures(t) {
		kind, dev := captureKind(dir)
		want, err := os.ReadFile(filepath.Join(dir, "dmsetup.out"))
		if err != nil {
			t.Fatal(err)
		}
		replay := replayCaller(t, dir, kind)
		buf := make([]byte, 64<<10)
		shared := func(req uint32, version [3]uint32, name string, flags uint32, payload []byte) ([]byte, error) {
			b, err := replay(req, version, name, flags, payload)
			if err != nil {
				return nil, err
			}
			for i := range buf {
				buf[i] = 0xff // what the last reply left is gone
			}
			return buf[:copy(buf, b)], nil
		}
		got, err := Format(shared, kind, dev)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: formatted through one buffer, the output differs from dmsetup\n--- dmsetup\n%s--- ioctl\n%s", dir, want, got)
		}
	}
}

// TestDMFormatTruncatedReplies cuts each captured reply short and requires
// an error naming the command, never a panic or a silently shorter output.
func TestDMFormatTruncatedReplies(t *testing.T) {
	for _, dir := range dmCaptures(t) {
		kind, dev := captureKind(dir)
		bins, _ := filepath.Glob(filepath.Join(dir, "*.bin"))
		for _, bin := range bins {
			full, err := os.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{0, HeaderSize - 1, len(full) - 1} {
				if n < 0 || n >= len(full) || (n == len(full)-1 && len(full) == HeaderSize) {
					continue
				}
				inner := replayCaller(t, dir, kind)
				call := func(req uint32, version [3]uint32, name string, flags uint32, payload []byte) ([]byte, error) {
					b, err := inner(req, version, name, flags, payload)
					if err == nil && filepath.Join(dir, nameOrList(req, name)+".bin") == bin {
						b = b[:n]
					}
					return b, err
				}
				if _, err := Format(call, kind, dev); err == nil {
					t.Errorf("%s cut to %d of %d bytes: no error", bin, n, len(full))
				}
			}
		}
	}
}

func nameOrList(req uint32, name string) string {
	if req == IoctlListDevices {
		return "list"
	}
	return name
}

// TestHideKeys checks the key masking rules read from dmsetup's source
// (the guest kernel loads no crypt cipher, so no captured crypt table
// exists): the crypt key, the second word, becomes zeroes of the same
// length unless it is a keyring reference (":..."); integrity keys after
// internal_hash:, journal_crypt: and journal_mac: likewise. Lines are built
// from parts, not copied from a device.
func TestHideKeys(t *testing.T) {
	key := strings.Repeat("ab", 32)
	zero := strings.Repeat("0", len(key))
	for _, c := range []struct{ target, in, want string }{
		{"crypt", "aes-xts-plain64 " + key + " 0 253:0 0", "aes-xts-plain64 " + zero + " 0 253:0 0"},
		{"crypt", "aes-xts-plain64 :64:logon:k 0 253:0 0", "aes-xts-plain64 :64:logon:k 0 253:0 0"},
		{"integrity", "253:0 0 32 J 2 internal_hash:hmac(sha256):" + key + " journal_mac:hmac(sha256):" + key,
			"253:0 0 32 J 2 internal_hash:hmac(sha256):" + zero + " journal_mac:hmac(sha256):" + zero},
		{"integrity", "253:0 0 32 J 1 internal_hash:crc32c", "253:0 0 32 J 1 internal_hash:crc32c"},
		{"linear", "253:0 " + key, "253:0 " + key},
	} {
		got := string(AppendLines(nil, "d", []Target{{Length: 8, Type: c.target, Params: c.in}}, true))
		if want := "d: 0 8 " + c.target + " " + c.want + "\n"; got != want {
			t.Errorf("%s table:\n got %q\nwant %q", c.target, got, want)
		}
		got = string(AppendLines(nil, "d", []Target{{Length: 8, Type: c.target, Params: c.in}}, false))
		if want := "d: 0 8 " + c.target + " " + c.in + "\n"; got != want {
			t.Errorf("%s status masked: %q", c.target, got)
		}
	}
}

// BenchmarkDMFormat is keel's own work for the three dmsetup reads of the
// vdo-stacked capture (four devices, one VDO stats message) once the
// kernel has answered: parsing the replies and printing dmsetup's text.
// The replies are read into memory first, so no I/O is timed.
func BenchmarkDMFormat(b *testing.B) {
	type capture struct {
		kind, dev string
		files     map[string][]byte
	}
	var caps []capture
	dirs, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "dmioctl", "vdo-stacked", "*"))
	for _, dir := range dirs {
		kind, dev := captureKind(dir)
		c := capture{kind: kind, dev: dev, files: map[string][]byte{}}
		bins, _ := filepath.Glob(filepath.Join(dir, "*.bin"))
		for _, bin := range bins {
			data, err := os.ReadFile(bin)
			if err != nil {
				b.Fatal(err)
			}
			c.files[strings.TrimSuffix(filepath.Base(bin), ".bin")] = data
		}
		caps = append(caps, c)
	}
	if len(caps) != 3 {
		b.Fatalf("want the table, status and message captures of vdo-stacked, got %d", len(caps))
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range caps {
			call := func(req uint32, _ [3]uint32, name string, _ uint32, _ []byte) ([]byte, error) {
				// the caller hands out a fresh buffer each call, as the ioctl does
				return bytes.Clone(c.files[nameOrList(req, name)]), nil
			}
			if _, err := Format(call, c.kind, c.dev); err != nil {
				b.Fatal(err)
			}
		}
	}
}
