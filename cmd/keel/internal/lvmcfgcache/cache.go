// Package lvmcfgcache answers a probe pass's `lvmconfig --typeconfig full`
// from a file when nothing it reads has changed since lvmconfig last ran.
// Under TCG, and on a loaded hypervisor, the process start of lvmconfig is
// a measurable share of a `keel check` (docs/benchmark-history.md: 1.13×
// against 0.92× of lvm fullreport + keel version at ~50 LVs), and its
// answer changes only with what it reads.
//
// What lvmconfig reads (lib/commands/toolcontext.c, lvm2 2.03): the
// directory $LVM_SYSTEM_DIR (default /etc/lvm), its lvm.conf, its
// lvmlocal.conf and, for each host tag, lvm_<tag>.conf (_init_tag_configs,
// _load_config_file; the hostname is a tag when tags/hosttags is set); and
// with --typeconfig full the defaults compiled into the lvm binary. The key
// of an entry hashes all of these: the LVM_* environment, every such file's
// name and bytes (or its absence), the hostname, the boot ID, and the
// identity of the binary (device, inode, size, modification time), so a
// package upgrade or any edit is a miss. A result is stored only when the
// key read after lvmconfig ended equals the one read before it (an edit
// during the run is never stored under the old content), with exit status
// 0 and nothing on stderr.
//
// LVM_COMMAND_PROFILE in the environment puts a command profile
// (<config/profile_dir>/<name>.profile) at the front of LVM's config
// cascade, and lvmconfig without --mergedconfig prints that front
// (lvmconfig(8), --mergedconfig; lvm.conf(5), the config cascade): its
// answer then depends on a file whose directory lvm.conf may move, so
// under a command profile lvmconfig always runs and nothing is stored.
//
// keel snapshot does not use it (a snapshot records what lvmconfig prints
// now), and a replayed snapshot is never wrapped (ForNode). Any doubt (a
// file that cannot be read, an entry that is not ours) runs lvmconfig.
package lvmcfgcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/keel-storage/keel/internal/desiredcache"
	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
)

// format is bumped whenever the key's inputs or the entry's encoding change.
const format = "keel-lvmconfig-cache/1"

// suffix ends every entry's file name.
const suffix = ".out"

// Runner runs commands through Inner and answers probes.LVMConfigCmd from
// Dir when its key matches.
type Runner struct {
	Inner hostio.Runner
	// Dir holds the entries; it is made on the first store.
	Dir string
	// Root is the file system root of the inputs ("/" on a host; a test's
	// directory otherwise).
	Root string
	// Environ returns the environment lvmconfig runs with; nil is an
	// empty one.
	Environ func() []string
	// LookPath defaults to probes.LookPath.
	LookPath func(string) (string, error)

	mu      sync.Mutex
	flights map[string]*flight // by key
}

// Run answers c from the cache when c is lvmconfig's probe command and
// nothing it reads changed, or from the run of a caller that missed just
// before (flight); any other command goes to Inner, streaming
// (Cmd.Consume) included. lvmconfig's answer, cached or not, reaches
// c.Consume whole: its output is small, and it is what the cache keeps.
func (r *Runner) Run(ctx context.Context, c hostio.Cmd) (hostio.Result, error) {
	want := probes.LVMConfigCmd()
	if c.String() != want.String() || len(c.Env) > 0 || c.Stdin != nil {
		return r.Inner.Run(ctx, c)
	}
	key, err := r.key(c.Name)
	// lead is this call's run when it missed first: only that run stores,
	// and callers missing beside it share its answer.
	var lead *flight
	if err == nil {
		if out, ok := r.get(key); ok {
			c.ConsumeWhole(out)
			return hostio.Result{Stdout: out}, nil
		}
		f, first := r.join(key)
		if first {
			lead = f
			defer r.land(key, f)
		} else {
			select {
			case <-f.done:
			case <-ctx.Done():
				return hostio.Result{}, fmt.Errorf("lvmconfig cache: waiting for the lvmconfig already running: %w", ctx.Err())
			}
			if f.ok {
				out := bytes.Clone(f.out)
				c.ConsumeWhole(out)
				return hostio.Result{Stdout: out}, nil
			}
			// Not storable: run lvmconfig here, and store nothing.
		}
	}
	below := c
	below.Consume = nil
	res, runErr := r.Inner.Run(ctx, below)
	if lead != nil && runErr == nil && res.ExitCode == 0 && len(res.Stderr) == 0 {
		if after, err := r.key(c.Name); err == nil && after == key {
			_ = r.put(key, res.Stdout) // a cache that cannot be written only costs time
			lead.out, lead.ok = bytes.Clone(res.Stdout), true
		}
	}
	if runErr == nil {
		c.ConsumeWhole(res.Stdout)
	}
	return res, runErr
}

// flight is one lvmconfig run on a miss. Callers that miss the same key
// while it runs wait for it and take its answer when it is one the cache
// stores (exit 0, nothing on stderr, the key unchanged after the run);
// otherwise each runs lvmconfig itself. At boot every entry is stale (the
// boot ID is in the key), and keel activate asks at once from its warm-up
// and from its first activation report.
type flight struct {
	done chan struct{}
	out  []byte // set before done closes, when ok
	ok   bool
}

// join returns the run in flight for key, or starts one (first).
func (r *Runner) join(key string) (f *flight, first bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.flights[key]; ok {
		return f, false
	}
	if r.flights == nil {
		r.flights = make(map[string]*flight)
	}
	f = &flight{done: make(chan struct{})}
	r.flights[key] = f
	return f, true
}

// land ends f's run and wakes its waiters.
func (r *Runner) land(key string, f *flight) {
	r.mu.Lock()
	delete(r.flights, key)
	r.mu.Unlock()
	close(f.done)
}

// path is p under Root.
func (r *Runner) path(p string) string { return filepath.Join(r.Root, p) }

// errCommandProfile is key's answer under a command profile (package
// comment): lvmconfig runs.
var errCommandProfile = errors.New("lvmconfig cache: LVM_COMMAND_PROFILE is set: the profile's file is not in the key")

// key hashes every input of lvmconfig --typeconfig full named in the
// package comment.
func (r *Runner) key(name string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", format)
	var environ []string
	if r.Environ != nil {
		environ = r.Environ()
	}
	lookPath := r.LookPath
	if lookPath == nil {
		lookPath = hostio.LookPath
	}
	var env []string
	sysDir := "/etc/lvm"
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "LVM_COMMAND_PROFILE="); ok && v != "" {
			return "", errCommandProfile
		}
		if strings.HasPrefix(kv, "LVM_") {
			env = append(env, kv)
			if v, ok := strings.CutPrefix(kv, "LVM_SYSTEM_DIR="); ok {
				sysDir = v
			}
		}
	}
	slices.Sort(env)
	fmt.Fprintf(h, "env %q\x00", env)
	bin, err := lookPath(name)
	if err != nil {
		return "", fmt.Errorf("lvmconfig cache: %w", err)
	}
	st, err := os.Stat(r.path(bin))
	if err != nil {
		return "", fmt.Errorf("lvmconfig cache: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return "", fmt.Errorf("lvmconfig cache: stat %s: no device and inode", bin)
	}
	fmt.Fprintf(h, "bin %s %d %d %d %d\x00", bin, sys.Dev, sys.Ino, st.Size(), st.ModTime().UnixNano())
	files := []string{filepath.Join(sysDir, "lvm.conf"), filepath.Join(sysDir, "lvmlocal.conf")}
	tags, err := filepath.Glob(r.path(filepath.Join(sysDir, "lvm_*.conf")))
	if err != nil {
		return "", fmt.Errorf("lvmconfig cache: %w", err)
	}
	for _, t := range tags {
		rel, err := filepath.Rel(r.path("/"), t)
		if err != nil {
			return "", fmt.Errorf("lvmconfig cache: %w", err)
		}
		files = append(files, "/"+rel)
	}
	files = append(files, "/proc/sys/kernel/hostname", "/proc/sys/kernel/random/boot_id")
	for _, f := range files {
		b, err := os.ReadFile(r.path(f))
		switch {
		case errors.Is(err, os.ErrNotExist):
			fmt.Fprintf(h, "file %s absent\x00", f)
		case err != nil:
			return "", fmt.Errorf("lvmconfig cache: %w", err)
		default:
			fmt.Fprintf(h, "file %s %d\x00", f, len(b))
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// get returns the stored output for key (desiredcache.ReadOwned).
func (r *Runner) get(key string) ([]byte, bool) {
	b, ok := desiredcache.ReadOwned(filepath.Join(r.Dir, key+suffix))
	if !ok {
		return nil, false
	}
	head, out, ok := bytes.Cut(b, []byte("\n"))
	if !ok || string(head) != format {
		return nil, false
	}
	return out, true
}

// put stores out under key and removes every other entry.
func (r *Runner) put(key string, out []byte) error {
	if err := desiredcache.Replace(r.Dir, key+suffix, suffix, append([]byte(format+"\n"), out...)); err != nil {
		return fmt.Errorf("lvmconfig cache: %w", err)
	}
	return nil
}

// DefaultDir is where the cache lives unless Options.CacheDir says
// otherwise: a tmpfs on every systemd host, emptied at boot.
const DefaultDir = "/run/keel/lvmconfig"

// Options are what the cache takes from keel's environment, which
// cmd/keel reads.
type Options struct {
	// CacheDir is $KEEL_CACHE_DIR: "" for DefaultDir, desiredcache.Off for
	// no cache, otherwise the directory whose subdirectory lvmconfig holds
	// the entries.
	CacheDir string
	// Environ returns the environment lvmconfig runs with (os.Environ).
	Environ func() []string
}

// Dir returns the cache directory that cacheDir (Options.CacheDir)
// selects, or "" when the cache is off.
func Dir(cacheDir string) string {
	switch cacheDir {
	case desiredcache.Off:
		return ""
	case "":
		return DefaultDir
	default:
		return filepath.Join(cacheDir, "lvmconfig")
	}
}

// ForNode returns src with its lvmconfig answered from the cache when src
// reads the live host (node is "": probes.NodeSource) and the cache is on;
// a replayed snapshot is returned as it is.
func ForNode(src hostio.Source, node string, o Options) hostio.Source {
	dir := Dir(o.CacheDir)
	if node != "" || dir == "" {
		return src
	}
	src.Runner = &Runner{Inner: src.Runner, Dir: dir, Root: "/", Environ: o.Environ}
	return src
}
