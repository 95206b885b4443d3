// Package desiredcache keeps validated desired states on disk so that a
// one-shot command (keel check from a timer, keel plan, keel udev-rules)
// whose /etc/keel did not change since the last run skips the CUE
// evaluation. An entry is keyed by the desired-state files' names and bytes
// and by the running binary's Go build ID, which changes with the embedded
// schema and with every Go check keel runs after CUE; an invalid desired
// state is never stored, so its errors always come from a fresh load.
//
// The cache only ever saves time: any doubt (no build ID, an entry that is
// not ours, does not decode, or a directory that cannot be written) means a
// fresh load.
package desiredcache

import (
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/keel-storage/keel/reconcile/atomicfile"
	"github.com/keel-storage/keel/schema/desiredfiles"
	"github.com/keel-storage/keel/schema/spec"
)

// DefaultDir is where the cache lives unless the caller names another
// directory: a tmpfs on every systemd host, emptied at boot.
const DefaultDir = "/run/keel/desired"

// StateSubdir is the cache's directory inside keel's state directory
// (/var/lib/keel), where a live host's loop keeps it so that a reboot keeps
// it too: keel activate, apply and the daemon write it, keel-boot reads it.
const StateSubdir = "desired-cache"

// Off, as Open's dir, turns the cache off.
const Off = "off"

// format is bumped whenever the stored encoding changes.
const format = "keel-desired-cache/1"

// suffix ends every entry's file name.
const suffix = ".json"

// Cache is one cache directory bound to one binary.
type Cache struct {
	dir     string
	buildID string
}

// entry is what a cache file holds. JSON, not gob: gob drops a *bool that
// points to false, and zero: false is not zero unset. Every field of
// schema.Config round-trips through its JSON form (threads as "auto" or the
// six counts); the package's tests hold every desired state in the
// repository to that.
type entry struct {
	Format string       `json:"format"`
	Config *spec.Config `json:"config"`
}

// Open returns the cache in dir for the running binary: in DefaultDir
// when dir is "", nil when dir is Off or the binary has no Go build ID.
// cmd/keel passes $KEEL_CACHE_DIR.
func Open(dir string) *Cache {
	switch dir {
	case Off:
		return nil
	case "":
		dir = DefaultDir
	}
	id, err := ownBuildID()
	if err != nil {
		return nil
	}
	return &Cache{dir: dir, buildID: id}
}

// New returns a cache in dir for a binary with the given build ID (tests).
func New(dir, buildID string) *Cache { return &Cache{dir: dir, buildID: buildID} }

// ownBuildID reads the Go build ID note of the running executable; it is
// read once per process.
var ownBuildID = sync.OnceValues(func() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return BuildID(exe)
})

// BuildID returns the Go build ID of the ELF executable at path, from its
// .note.go.buildid section (kept by -s -w, which strip only symbols).
func BuildID(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("build id of %s: %w", path, err)
	}
	defer f.Close()
	s := f.Section(".note.go.buildid")
	if s == nil {
		return "", fmt.Errorf("build id of %s: no .note.go.buildid section", path)
	}
	b, err := s.Data()
	if err != nil {
		return "", fmt.Errorf("build id of %s: %w", path, err)
	}
	// One ELF note: namesz, descsz, type, then the name "Go\x00\x00" and the ID.
	if len(b) < 16 {
		return "", fmt.Errorf("build id of %s: note of %d bytes", path, len(b))
	}
	namesz := binary.LittleEndian.Uint32(b[0:4])
	descsz := binary.LittleEndian.Uint32(b[4:8])
	off := 12 + (uint64(namesz)+3)&^3
	if namesz != 4 || off+uint64(descsz) > uint64(len(b)) || descsz == 0 {
		return "", fmt.Errorf("build id of %s: malformed note", path)
	}
	return string(b[off : off+uint64(descsz)]), nil
}

// key hashes the format, the build ID and every file's name and content.
func (c *Cache) key(files []desiredfiles.File) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00", format, c.buildID, len(files))
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00", f.Name, len(f.Data))
		h.Write(f.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (c *Cache) path(files []desiredfiles.File) string {
	return filepath.Join(c.dir, c.key(files)+suffix)
}

// Get returns the stored desired state for files, or false. An entry is used
// only when it is a regular file of this process's user that nobody else
// may write.
func (c *Cache) Get(files []desiredfiles.File) (*spec.Config, bool) {
	if c == nil {
		return nil, false
	}
	b, ok := ReadOwned(c.path(files))
	if !ok {
		return nil, false
	}
	var e entry
	if err := json.Unmarshal(b, &e); err != nil || e.Format != format || e.Config == nil {
		return nil, false
	}
	return e.Config, true
}

// Put stores cfg, the validated desired state of files, and removes every
// other entry (a host has one desired state; old ones are dead weight).
func (c *Cache) Put(files []desiredfiles.File, cfg *spec.Config) error {
	if c == nil {
		return nil
	}
	b, err := json.Marshal(entry{Format: format, Config: cfg})
	if err != nil {
		return fmt.Errorf("desired-state cache: encode: %w", err)
	}
	if err := Replace(c.dir, filepath.Base(c.path(files)), suffix, b); err != nil {
		return fmt.Errorf("desired-state cache: %w", err)
	}
	return nil
}

// ReadOwned returns the content of the file p when it is a regular file of
// this process's user that nobody else may write, or false: an entry of a
// cache that keel did not write itself is never used.
func ReadOwned(p string) ([]byte, bool) {
	st, err := os.Lstat(p)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o022 != 0 {
		return nil, false
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != os.Geteuid() {
		return nil, false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	return b, true
}

// Replace makes dir (mode 0700) when it is missing, writes data to dir/name
// (atomicfile, mode 0600) and removes every other file of dir whose name
// ends in suffix: a cache of one entry.
func Replace(dir, name, suffix string, data []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	p := filepath.Join(dir, name)
	if err := atomicfile.Write(p, data, 0o600); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	var errs []error
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, suffix) && n != name {
			if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Validator validates desired-state files into a desired state
// (schema.Loader.LoadConfig); an invalid state is an error.
type Validator func(files []desiredfiles.File) (*spec.Config, error)

// Load reads the desired state in paths (desiredfiles.Read) and returns it
// from the cache when the same files were validated by this binary before,
// or validates them with validate and stores the result. Errors are those
// of desiredfiles.Read and validate; a cache that cannot be written is not
// one.
func (c *Cache) Load(validate Validator, paths ...string) (*spec.Config, error) {
	files, err := desiredfiles.Read(paths...)
	if err != nil {
		return nil, err
	}
	if cfg, ok := c.Get(files); ok {
		return cfg, nil
	}
	cfg, err := validate(files)
	if err != nil {
		return nil, err
	}
	_ = c.Put(files, cfg) // best effort: a miss next time costs one load
	return cfg, nil
}
