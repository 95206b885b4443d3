package watch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// run starts Watch on dir and returns a channel of reported changes. The
// debounce is long enough that a loaded machine (the e2e guests run beside
// the unit tests in CI) does not split one os.WriteFile, a create then a
// write, into two changes.
func run(t *testing.T, dir string, match func(string) bool) <-chan Sum {
	return runDebounced(t, dir, match, 400*time.Millisecond)
}

func runDebounced(t *testing.T, dir string, match func(string) bool, debounce time.Duration) <-chan Sum {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan Sum, 16)
	done := make(chan struct{})
	started := make(chan struct{})
	go func() {
		defer close(done)
		Watch(ctx, dir, match, Options{Debounce: debounce, Started: func() { close(started) }},
			func(s Sum) { ch <- s }, func(err error) { t.Log(err) })
	}()
	t.Cleanup(func() { cancel(); <-done })
	<-started
	return ch
}

func expect(t *testing.T, ch <-chan Sum, n int, what string) {
	t.Helper()
	// Wait up to five seconds for n changes, then a little longer than the
	// debounce for extras.
	deadline := time.After(5 * time.Second)
	got := 0
	for got < n {
		select {
		case <-ch:
			got++
		case <-deadline:
			t.Fatalf("%s: %d change(s) reported, want %d", what, got, n)
		}
	}
	select {
	case <-ch:
		t.Fatalf("%s: more than %d change(s) reported", what, n)
	case <-time.After(600 * time.Millisecond):
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mv(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// Every write style from go-notes §3.1, one after the other on one watch.
func TestWriteStyles(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "desired.cue")
	write(t, cfg, "a: 1\n")
	ch := run(t, dir, CueFiles)

	// tmp + mv over (Ansible, Puppet, Salt, chezmoi).
	write(t, filepath.Join(dir, ".desired.cue.tmp"), "a: 2\n")
	mv(t, filepath.Join(dir, ".desired.cue.tmp"), cfg)
	expect(t, ch, 1, "tmp+mv")

	// > file: truncate and write.
	f, err := os.OpenFile(cfg, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("a: 3\n")
	f.Close()
	expect(t, ch, 1, "truncate+write")

	// sed -i: a temporary file in the directory renamed over the file.
	write(t, filepath.Join(dir, "sedAbC123"), "a: 4\n")
	mv(t, filepath.Join(dir, "sedAbC123"), cfg)
	expect(t, ch, 1, "sed -i")

	// vim: backup, new file, rename dance.
	write(t, cfg+"~", "a: 4\n")
	write(t, cfg+".new", "a: 5\n")
	mv(t, cfg, cfg+".old")
	mv(t, cfg+".new", cfg)
	os.Remove(cfg + "~")
	os.Remove(cfg + ".old")
	expect(t, ch, 1, "vim")

	// rm, then recreate: one change once it is back (debounced together).
	os.Remove(cfg)
	write(t, cfg, "a: 6\n")
	expect(t, ch, 1, "rm+create")

	// chmod and touch change no content: nothing reported.
	os.Chmod(cfg, 0o600)
	now := time.Now()
	os.Chtimes(cfg, now, now)
	expect(t, ch, 0, "chmod/touch")

	// A second .cue file counts; a non-.cue file does not.
	write(t, filepath.Join(dir, "extra.cue"), "b: 1\n")
	expect(t, ch, 1, "new .cue file")
	write(t, filepath.Join(dir, "notes.txt"), "x")
	expect(t, ch, 0, "non-.cue file")
}

// A burst of writes is one change. The debounce is longer than in the
// other tests so a loaded machine's scheduling gaps stay inside it.
func TestBurstIsOneChange(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "desired.cue")
	write(t, cfg, "a: 0\n")
	ch := runDebounced(t, dir, CueFiles, 400*time.Millisecond)
	for i := 0; i < 20; i++ {
		write(t, cfg, "a: "+string(rune('a'+i))+"\n")
	}
	expect(t, ch, 1, "burst")
}

// A Kubernetes ConfigMap mount: the files are symlinks through ..data,
// and the update swaps ..data; no event names the file itself.
func TestSymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "..2026_01"), 0o755)
	write(t, filepath.Join(dir, "..2026_01", "desired.cue"), "a: 1\n")
	os.Symlink("..2026_01", filepath.Join(dir, "..data"))
	os.Symlink("..data/desired.cue", filepath.Join(dir, "desired.cue"))
	ch := run(t, dir, CueFiles)

	os.Mkdir(filepath.Join(dir, "..2026_02"), 0o755)
	write(t, filepath.Join(dir, "..2026_02", "desired.cue"), "a: 2\n")
	os.Symlink("..2026_02", filepath.Join(dir, "..data_tmp"))
	mv(t, filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data"))
	expect(t, ch, 1, "symlink swap")
}

func TestResyncCatchesMissedChange(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "real")
	os.Mkdir(sub, 0o755)
	write(t, filepath.Join(sub, "lvm.conf"), "x")
	// The watched directory holds a symlink to a file elsewhere: a change
	// there makes no event in dir, only the resync finds it.
	os.Symlink(filepath.Join(sub, "lvm.conf"), filepath.Join(dir, "lvm.conf"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := make(chan Sum, 4)
	go Watch(ctx, dir, Named("lvm.conf"), Options{Debounce: 20 * time.Millisecond, Resync: 100 * time.Millisecond},
		func(s Sum) { ch <- s }, func(error) {})
	time.Sleep(50 * time.Millisecond)
	write(t, filepath.Join(sub, "lvm.conf"), "y")
	select {
	case <-ch:
	case <-time.After(2 * time.Second):
		t.Fatal("resync did not report the change")
	}
}

// The directory itself removed and made again (rm -rf /etc/keel, then a
// configuration tool writes it afresh), or renamed away and replaced: the
// new directory is watched, without waiting for a resync.
func TestDirectoryRecreated(t *testing.T) {
	for _, how := range []string{"removed", "renamed"} {
		t.Run(how, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "keel")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, "a.cue"), "x: 1\n")
			ch := run(t, dir, CueFiles)
			if how == "removed" {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
			} else {
				mv(t, dir, dir+".old")
			}
			time.Sleep(300 * time.Millisecond)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, "a.cue"), "x: 2\n")
			// Seen by the retry within a second, then each later edit by
			// the new watch.
			deadline := time.After(3 * time.Second)
			select {
			case <-ch:
			case <-deadline:
				t.Fatal("the recreated directory's file was not seen")
			}
			if how == "renamed" {
				write(t, filepath.Join(dir+".old", "a.cue"), "x: 9\n") // the old directory: not keel's
			}
			write(t, filepath.Join(dir, "a.cue"), "x: 3\n")
			expect(t, ch, 1, "an edit in the recreated directory")
		})
	}
}

// A write made right after Started returns is reported: the daemon starts
// its watches, waits for Started, and only then reads the desired state.
func TestWriteRightAfterStarted(t *testing.T) {
	for i := 0; i < 20; i++ {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "a.cue"), "x: 1\n")
		ctx, cancel := context.WithCancel(context.Background())
		started := make(chan struct{})
		changed := make(chan Sum, 4)
		done := make(chan struct{})
		go func() {
			defer close(done)
			Watch(ctx, dir, CueFiles, Options{Debounce: 10 * time.Millisecond, Started: func() { close(started) }},
				func(s Sum) { changed <- s }, func(error) {})
		}()
		<-started
		write(t, filepath.Join(dir, "a.cue"), "x: 2\n")
		select {
		case <-changed:
		case <-time.After(2 * time.Second):
			t.Fatalf("round %d: a write right after Started was not reported", i)
		}
		cancel()
		<-done
	}
}

func TestHash(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.cue"), "x")
	write(t, filepath.Join(dir, "b.cue"), "y")
	h1, _ := Hash(dir, CueFiles)
	// Moving content between files is a change.
	write(t, filepath.Join(dir, "a.cue"), "")
	write(t, filepath.Join(dir, "b.cue"), "xy")
	h2, _ := Hash(dir, CueFiles)
	if h1 == h2 {
		t.Fatal("hash ignores file boundaries")
	}
	if _, err := Hash(filepath.Join(dir, "missing"), CueFiles); err == nil {
		t.Fatal("missing directory hashed")
	}
}
