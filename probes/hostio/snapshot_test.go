package hostio

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeRunner answers every command with a fixed result; it stands in for a
// host only in the snapshot encoding tests, which check bytes, not meaning.
type fakeRunner map[string]Result

func (f fakeRunner) Run(_ context.Context, c Cmd) (Result, error) {
	r, ok := f[c.String()]
	if !ok {
		return Result{ExitCode: -1}, errors.New("exec: not found")
	}
	return r, nil
}

func TestSnapshotRoundTrip(t *testing.T) {
	root := t.TempDir()
	binary := []byte{0, 1, 2, 0xff, '\n', '-', '-', ' '}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "sys/block/sda/queue"), 0o755))
	must(os.WriteFile(filepath.Join(root, "sys/block/sda/queue/rotational"), []byte("1\n"), 0o644))
	must(os.WriteFile(filepath.Join(root, "dev.img"), append(bytes.Repeat([]byte{7}, 100), binary...), 0o644))
	must(os.WriteFile(filepath.Join(root, "marker"), []byte("a\n-- fake --\nb"), 0o644))
	must(os.Symlink("../devices/x/sda", filepath.Join(root, "sys/block/sdalink")))

	cmds := fakeRunner{
		"lvm version":    {Stdout: []byte("  LVM version: x\n"), ExitCode: 0},
		"lvm vgs nosuch": {Stdout: []byte("{}\n"), Stderr: []byte("  Volume group \"nosuch\" not found\n"), ExitCode: 5},
		"dmsetup table":  {Stdout: binary, ExitCode: 0},
	}
	rec := NewRecorder(Source{Runner: cmds, FS: DirFS(root)})
	src := rec.Source()
	ctx := context.Background()
	var want []Result
	for _, c := range []Cmd{{Name: "lvm", Args: []string{"version"}}, {Name: "lvm", Args: []string{"vgs", "nosuch"}}, {Name: "dmsetup", Args: []string{"table"}}} {
		r, err := src.Runner.Run(ctx, c)
		must(err)
		want = append(want, r)
	}
	if _, err := src.Runner.Run(ctx, Cmd{Name: "missing"}); err == nil {
		t.Fatal("missing command: no error")
	}
	readAll := func(s Source) []string {
		var out []string
		b, err := s.FS.ReadFile("/sys/block/sda/queue/rotational")
		out = append(out, string(b), errText(err))
		b, err = s.FS.ReadFile("/marker")
		out = append(out, string(b), errText(err))
		b, err = s.FS.ReadAt("/dev.img", 100, 4096)
		out = append(out, string(b), errText(err))
		names, err := s.FS.ReadDir("/sys/block")
		out = append(out, strings.Join(names, ","), errText(err))
		l, err := s.FS.Readlink("/sys/block/sdalink")
		out = append(out, l, errText(err))
		_, err = s.FS.ReadFile("/nonexistent")
		out = append(out, errText(err), boolText(errors.Is(err, fs.ErrNotExist)))
		return out
	}
	live := readAll(src)
	snap := rec.Snapshot("h1", "v0", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	text, err := snap.MarshalText()
	must(err)
	text2, err := snap.MarshalText()
	must(err)
	if !bytes.Equal(text, text2) {
		t.Fatal("MarshalText is not deterministic")
	}
	back, err := ParseSnapshot(text)
	must(err)
	if back.Host != "h1" || back.Version != "v0" || !back.Time.Equal(snap.Time) {
		t.Errorf("header = %q %q %v", back.Host, back.Version, back.Time)
	}
	re := Replay(back)
	for i, c := range []Cmd{{Name: "lvm", Args: []string{"version"}}, {Name: "lvm", Args: []string{"vgs", "nosuch"}}, {Name: "dmsetup", Args: []string{"table"}}} {
		r, err := re.Runner.Run(ctx, c)
		must(err)
		if !bytes.Equal(r.Stdout, want[i].Stdout) || !bytes.Equal(r.Stderr, want[i].Stderr) || r.ExitCode != want[i].ExitCode {
			t.Errorf("%s: replay %+v, recorded %+v", c, r, want[i])
		}
	}
	if _, err := re.Runner.Run(ctx, Cmd{Name: "missing"}); err == nil || err.Error() != "exec: not found" {
		t.Errorf("replayed run error = %v, want the recorded one", err)
	}
	got := readAll(re)
	for i := range live {
		if live[i] != got[i] {
			t.Errorf("file access %d: replay %q, live %q", i, got[i], live[i])
		}
	}
	if _, err := re.Runner.Run(ctx, Cmd{Name: "lvs"}); err == nil || !strings.Contains(err.Error(), `"lvs" was not recorded`) {
		t.Errorf("unrecorded command: error %v", err)
	}
	if _, err := re.FS.ReadFile("/etc/other"); err == nil || !strings.Contains(err.Error(), "/etc/other was not recorded") ||
		!errors.Is(err, ErrNotRecorded) || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("unrecorded file: error %v", err)
	}
	// Re-recorded from the replay, the access still reads as not recorded
	// (a snapshot re-recorded from an older one), not as a failed read.
	rerec := NewRecorder(re)
	_, _ = rerec.Source().FS.ReadDir("/etc/other.d")
	again := rerec.Snapshot("h1", "v0", snap.Time)
	if _, err := Replay(again).FS.ReadDir("/etc/other.d"); !errors.Is(err, ErrNotRecorded) {
		t.Errorf("re-recorded unrecorded dir: error %v, want ErrNotRecorded", err)
	}
	if _, err := Replay(back).FS.ReadFile("/nonexistent"); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrNotRecorded) {
		t.Errorf("a recorded missing file reads as not recorded: %v", err)
	}
	if _, err := re.FS.ReadAt("/dev.img", 0, 4096); err == nil || !strings.Contains(err.Error(), "4096 bytes at 0") {
		t.Errorf("unrecorded read-at: error %v", err)
	}
}

// A command's argv is stored as typed, so that a script can run it from
// the snapshot, and replays under the same key.
func TestSnapshotArgvAsTyped(t *testing.T) {
	c := Cmd{Name: "lvm", Args: []string{"fullreport", "-S", "pvseg_start<0", "-S", "segtype!=thin&&lv_name=~^vm"}}
	rec := NewRecorder(Source{Runner: fakeRunner{c.String(): {Stdout: []byte("{}\n")}}, FS: DirFS(t.TempDir())})
	if _, err := rec.Source().Runner.Run(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	text, err := rec.Snapshot("h1", "v0", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)).MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	if want := `["lvm","fullreport","-S","pvseg_start<0","-S","segtype!=thin&&lv_name=~^vm"]` + "\n"; !bytes.Contains(text, []byte(want)) {
		t.Errorf("the snapshot lacks the argv as typed, %s:\n%s", want, text)
	}
	back, err := ParseSnapshot(text)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := Replay(back).Runner.Run(context.Background(), c); err != nil || string(r.Stdout) != "{}\n" {
		t.Errorf("replay: %q %v", r.Stdout, err)
	}
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func TestParseSnapshotErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"no header", "-- cmd/x/argv --\n[\"x\"]\n", "missing header"},
		{"bad argv", "keel node snapshot\n-- cmd/x/argv --\n[x\n", "cmd/x/argv"},
		{"bad exit", "keel node snapshot\n-- cmd/x/argv --\n[\"x\"]\n-- cmd/x/exit --\nzero\n", "cmd/x/exit"},
		{"no argv", "keel node snapshot\n-- cmd/x/exit --\n0\n", "no argv"},
		{"bad op", "keel node snapshot\n-- zap/etc/x --\n", "unknown operation"},
		{"bad at", "keel node snapshot\n-- at/dev/x --\n", "at<path>@"},
		{"bad base64", "keel node snapshot\n-- file/x.b64 --\n!!!\n", "file/x.b64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSnapshot([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// The snapshot of a host with a missing PV (e2e capture vg-incomplete)
// holds the probe's readlink of LVM's name for it, "[unknown]": a recorded
// name that is not a path must parse back and replay its error.
func TestSnapshotUnknownPVLink(t *testing.T) {
	s, err := ReadSnapshotFile(filepath.Join("..", "..", "reconcile", "plan", "testdata", "snapshots", "vg-incomplete.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	rec, ok := s.Files[OpLink+"[unknown]"]
	if !ok || !rec.NotExist {
		t.Fatalf("no not-exist link record for [unknown]: %+v", rec)
	}
	text, err := s.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseSnapshot(text)
	if err != nil {
		t.Fatalf("re-parse: %v", err)
	}
	if got := again.Files[OpLink+"[unknown]"]; got.Path != "[unknown]" || !got.NotExist {
		t.Errorf("after a round trip: %+v", got)
	}
	if _, err := Replay(again).FS.Readlink("[unknown]"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("replayed readlink [unknown]: %v, want not-exist", err)
	}
}

// The storage.cfg path a pass read survives the text form, and a replay
// reads it whatever its caller asks; a snapshot without one names none. A
// file access the snapshot lacks is ErrNotRecorded, not a missing file.
func TestSnapshotPVEStorageCfg(t *testing.T) {
	s := &Snapshot{Host: "n1", Version: "v", Time: time.Unix(0, 0), Commands: map[string]CmdRecord{}, Files: map[string]FileRecord{},
		PVEStorageCfg: "/etc/keel-pve/storage.cfg"}
	b, err := s.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("\npve-storage-cfg: /etc/keel-pve/storage.cfg\n")) {
		t.Fatalf("header lacks the path:\n%s", b)
	}
	back, err := ParseSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := Replay(back).PVEStorageCfg; got != "/etc/keel-pve/storage.cfg" {
		t.Fatalf("replay reads %q", got)
	}
	s.PVEStorageCfg = ""
	if b, err = s.MarshalText(); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("pve-storage-cfg")) {
		t.Fatalf("a default path is written:\n%s", b)
	}
	_, err = Replay(back).FS.ReadDir("/etc/pve")
	if !errors.Is(err, ErrNotRecorded) || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("unrecorded access: %v", err)
	}
	// Re-recorded from the replay (keel snapshot --node), it is still
	// an access nobody made.
	rec := NewRecorder(Replay(back))
	if _, err := rec.Source().FS.ReadDir("/etc/pve"); err == nil {
		t.Fatal("unrecorded access answered")
	}
	b, err = rec.Snapshot("n1", "v", time.Unix(0, 0)).MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = Replay(again).FS.ReadDir("/etc/pve"); !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("re-recorded: %v", err)
	}
}

// TestReadSnapshotFileBound: a snapshot larger than MaxSnapshotSize is
// refused from its size, before it is read (a sparse file here: none of its
// bytes are read), and a file that is not regular is refused by its kind.
func TestReadSnapshotFileBound(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.txtar")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxSnapshotSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = ReadSnapshotFile(big)
	want := "snapshot " + big + ": 67108865 bytes, more than a node snapshot holds (at most 64 MiB); pass a file written by keel snapshot"
	if err == nil || err.Error() != want {
		t.Errorf("ReadSnapshotFile(%d bytes) = %v, want %q", MaxSnapshotSize+1, err, want)
	}
	dir := t.TempDir()
	_, err = ReadSnapshotFile(dir)
	want = "snapshot " + dir + ": not a regular file (a directory); pass a file written by keel snapshot"
	if err == nil || err.Error() != want {
		t.Errorf("ReadSnapshotFile(directory) = %v, want %q", err, want)
	}
}
