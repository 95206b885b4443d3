package hostio

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rogpeppe/go-internal/txtar"
)

// File operations recorded in a snapshot.
const (
	OpFile   = "file" // ReadFile
	OpDir    = "dir"  // ReadDir
	OpLink   = "link" // Readlink
	OpReadAt = "at"   // ReadAt
)

// Snapshot is one recorded probe pass: every command with its output and
// exit status and every file access with its content or error. It is
// stored as a txtar archive (see MarshalText and ParseSnapshot).
type Snapshot struct {
	Host    string    // host name at recording time
	Version string    // keel version that recorded it
	Time    time.Time // recording time, UTC
	// PVEStorageCfg is the path of Proxmox VE's storage.cfg the recorded
	// pass read (the desired state's proxmox.storageConfig); "" when the
	// pass read the default path. A replay reads the same path
	// (Source.PVEStorageCfg), whatever desired state it is judged against.
	PVEStorageCfg string
	// Commands maps Cmd.String() to its record.
	Commands map[string]CmdRecord
	// Files maps an access key (operation, path, and offset for ReadAt) to its record.
	Files map[string]FileRecord
}

// CmdRecord is one recorded command.
type CmdRecord struct {
	Argv   []string
	Result Result
	// Error is the runner's error text when the command could not run.
	Error string
}

// FileRecord is one recorded file access.
type FileRecord struct {
	Op   string // OpFile, OpDir, OpLink or OpReadAt
	Path string // absolute host path
	Off  int64  // ReadAt only
	N    int    // ReadAt only
	// Data is the file content, the directory names one per line, or the
	// link target.
	Data []byte
	// Error is the error text when the access failed; NotExist marks a
	// missing file, which replays as fs.ErrNotExist.
	Error    string
	NotExist bool
}

func (r FileRecord) key() string {
	if r.Op == OpReadAt {
		return fmt.Sprintf("%s%s@%d+%d", r.Op, r.Path, r.Off, r.N)
	}
	return r.Op + r.Path
}

func (r FileRecord) describe() string {
	if r.Op == OpReadAt {
		return fmt.Sprintf("%s (%d bytes at %d)", r.Path, r.N, r.Off)
	}
	return r.Path
}

// recordedError replays an error recorded in a snapshot with its original
// text; a recorded missing file still matches fs.ErrNotExist, and an access
// that a replay could not answer still matches ErrNotRecorded.
type recordedError struct {
	msg      string
	notExist bool
}

func (e *recordedError) Error() string { return e.msg }
func (e *recordedError) Is(target error) bool {
	switch target {
	case fs.ErrNotExist:
		return e.notExist
	case ErrNotRecorded:
		// Recorded while re-recording a replay that lacked the access
		// (keel snapshot --node): still not looked at.
		return strings.HasSuffix(e.msg, " "+ErrNotRecorded.Error())
	}
	return false
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

func joinLines(names []string) []byte {
	var b bytes.Buffer
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func splitLines(b []byte) []string {
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return []string{}
	}
	return strings.Split(s, "\n")
}

var slugUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// cmdSlug names a command's directory in the archive: up to three words of
// the argv, then a hash of the whole argv so that different commands never
// share a name.
func cmdSlug(argv []string) string {
	h := sha256.Sum256([]byte(strings.Join(argv, "\x00")))
	var words []string
	for _, a := range argv {
		if len(words) == 3 {
			break
		}
		w := strings.Trim(slugUnsafe.ReplaceAllString(strings.TrimLeft(a, "-/"), "_"), "_")
		if w != "" {
			words = append(words, w)
		}
	}
	return strings.Join(words, "-") + "-" + hex.EncodeToString(h[:4])
}

// textSafe reports whether data can be stored verbatim in a txtar member
// and read back byte for byte.
func textSafe(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	if !utf8.Valid(b) || b[len(b)-1] != '\n' || bytes.IndexByte(b, '\r') >= 0 || bytes.IndexByte(b, 0) >= 0 {
		return false
	}
	return !bytes.HasPrefix(b, []byte("-- ")) && !bytes.Contains(b, []byte("\n-- "))
}

func encodeMember(name string, data []byte) txtar.File {
	if textSafe(data) {
		return txtar.File{Name: name, Data: data}
	}
	enc := base64.StdEncoding.EncodeToString(data)
	var b bytes.Buffer
	for len(enc) > 76 {
		b.WriteString(enc[:76])
		b.WriteByte('\n')
		enc = enc[76:]
	}
	b.WriteString(enc)
	b.WriteByte('\n')
	return txtar.File{Name: name + ".b64", Data: b.Bytes()}
}

func decodeMember(f txtar.File) (string, []byte, error) {
	if name, ok := strings.CutSuffix(f.Name, ".b64"); ok {
		data, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(string(f.Data), "\n", ""))
		if err != nil {
			return "", nil, fmt.Errorf("snapshot member %s: %w", f.Name, err)
		}
		return name, data, nil
	}
	return f.Name, f.Data, nil
}

// MarshalText writes the snapshot as a txtar archive: a header comment, then
// the commands (cmd/<slug>/argv, exit, stdout, stderr, error) and the file
// accesses (file/..., dir/..., link/..., at/...@off+n, and err/<op>/... for
// failed accesses), all in sorted order so the same pass gives the same bytes.
func (s *Snapshot) MarshalText() ([]byte, error) {
	ar := &txtar.Archive{}
	ar.Comment = fmt.Appendf(nil, "keel node snapshot\nhost: %s\nkeel: %s\ntime: %s\ncommands: %d\nfiles: %d\n",
		s.Host, s.Version, s.Time.UTC().Format(time.RFC3339), len(s.Commands), len(s.Files))
	if s.PVEStorageCfg != "" {
		ar.Comment = fmt.Appendf(ar.Comment, "pve-storage-cfg: %s\n", s.PVEStorageCfg)
	}
	var cmds []txtar.File
	for _, rec := range s.Commands {
		dir := "cmd/" + cmdSlug(rec.Argv) + "/"
		// The argv as typed ("pvseg_start<0", not "\u003c"), so that a
		// script can run it from the snapshot; it decodes the same.
		var argv bytes.Buffer
		enc := json.NewEncoder(&argv)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rec.Argv); err != nil { // ends in a newline
			return nil, fmt.Errorf("snapshot: command %q: %w", strings.Join(rec.Argv, " "), err)
		}
		cmds = append(cmds,
			txtar.File{Name: dir + "argv", Data: argv.Bytes()},
			txtar.File{Name: dir + "exit", Data: fmt.Appendf(nil, "%d\n", rec.Result.ExitCode)},
			encodeMember(dir+"stdout", rec.Result.Stdout),
			encodeMember(dir+"stderr", rec.Result.Stderr))
		if rec.Error != "" {
			cmds = append(cmds, encodeMember(dir+"error", []byte(rec.Error+"\n")))
		}
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	var files []txtar.File
	for _, rec := range s.Files {
		if rec.Error != "" {
			kind := "error"
			if rec.NotExist {
				kind = "not-exist"
			}
			files = append(files, encodeMember("err/"+rec.key(), []byte(kind+"\n"+rec.Error+"\n")))
			continue
		}
		data := rec.Data
		if rec.Op == OpLink {
			data = append(append([]byte{}, data...), '\n')
		}
		files = append(files, encodeMember(rec.key(), data))
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	ar.Files = append(cmds, files...)
	return txtar.Format(ar), nil
}

var readAtSuffix = regexp.MustCompile(`@(\d+)\+(\d+)$`)

// Migration adapts snapshots recorded by an older keel to the commands
// keel's readers run now, so that a replay reads what keel reads on a live
// host. The readers that changed a command register one (RegisterMigration);
// this package knows none of their commands.
type Migration struct {
	// Snapshot rewrites a parsed snapshot in place into the form keel
	// records now, or leaves it as it is.
	Snapshot func(*Snapshot)
	// Cmd returns the argv under which an older keel recorded the
	// command c runs now; ok is false when c never had another.
	Cmd func(c Cmd) (old Cmd, ok bool)
}

// migrations are the registered Migrations, in order. They are set while
// the program initializes and only read afterwards.
var migrations []Migration

// RegisterMigration adds m to what ParseSnapshot and Replay apply. It is
// meant for package initialization (the probe's LVM report registers its
// own): a snapshot is parsed and replayed the same way in every program
// that links the reader whose command changed.
func RegisterMigration(m Migration) { migrations = append(migrations, m) }

// ParseSnapshot reads a snapshot written by MarshalText, and applies every
// registered Migration to it.
func ParseSnapshot(data []byte) (*Snapshot, error) {
	s, err := ParseSnapshotRaw(data)
	if err != nil {
		return nil, err
	}
	for _, m := range migrations {
		if m.Snapshot != nil {
			m.Snapshot(s)
		}
	}
	return s, nil
}

// ParseSnapshotRaw is ParseSnapshot without the Migrations: the snapshot
// as it was recorded.
func ParseSnapshotRaw(data []byte) (*Snapshot, error) {
	ar := txtar.Parse(data)
	s := &Snapshot{Commands: map[string]CmdRecord{}, Files: map[string]FileRecord{}}
	for _, line := range strings.Split(string(ar.Comment), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		switch k {
		case "host":
			s.Host = v
		case "keel":
			s.Version = v
		case "pve-storage-cfg":
			s.PVEStorageCfg = v
		case "time":
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return nil, fmt.Errorf("snapshot header: time %q: %w", v, err)
			}
			s.Time = t
		}
	}
	if !bytes.HasPrefix(ar.Comment, []byte("keel node snapshot\n")) {
		return nil, errors.New("snapshot: missing header line \"keel node snapshot\"")
	}
	bySlug := map[string]*CmdRecord{}
	for _, f := range ar.Files {
		name, data, err := decodeMember(f)
		if err != nil {
			return nil, err
		}
		if rest, ok := strings.CutPrefix(name, "cmd/"); ok {
			slug, field, ok := strings.Cut(rest, "/")
			if !ok {
				return nil, fmt.Errorf("snapshot member %s: want cmd/<slug>/<field>", name)
			}
			rec := bySlug[slug]
			if rec == nil {
				rec = &CmdRecord{}
				bySlug[slug] = rec
			}
			switch field {
			case "argv":
				if err := json.Unmarshal(data, &rec.Argv); err != nil {
					return nil, fmt.Errorf("snapshot member %s: %w", name, err)
				}
			case "exit":
				n, err := strconv.Atoi(strings.TrimSpace(string(data)))
				if err != nil {
					return nil, fmt.Errorf("snapshot member %s: %w", name, err)
				}
				rec.Result.ExitCode = n
			case "stdout":
				rec.Result.Stdout = data
			case "stderr":
				rec.Result.Stderr = data
			case "error":
				rec.Error = strings.TrimSuffix(string(data), "\n")
			default:
				return nil, fmt.Errorf("snapshot member %s: unknown command field %q", name, field)
			}
			continue
		}
		rec := FileRecord{}
		key := name
		if rest, ok := strings.CutPrefix(name, "err/"); ok {
			key = rest
			kind, msg, _ := strings.Cut(string(data), "\n")
			rec.NotExist = kind == "not-exist"
			rec.Error = strings.TrimSuffix(msg, "\n")
			if rec.Error == "" {
				rec.Error = kind
			}
		} else {
			rec.Data = data
		}
		i := strings.IndexByte(key, '/')
		for _, op := range []string{OpFile, OpDir, OpLink, OpReadAt} {
			// A recorded name need not be a path: LVM names a PV whose
			// device is gone "[unknown]", and the probe reads it as a link.
			if strings.HasPrefix(key, op) && (i < 0 || i > len(op)) {
				i = len(op)
				break
			}
		}
		if i <= 0 {
			return nil, fmt.Errorf("snapshot member %s: no operation prefix", name)
		}
		rec.Op, rec.Path = key[:i], key[i:]
		switch rec.Op {
		case OpFile, OpDir:
		case OpLink:
			rec.Data = bytes.TrimSuffix(rec.Data, []byte("\n"))
		case OpReadAt:
			m := readAtSuffix.FindStringSubmatch(rec.Path)
			if m == nil {
				return nil, fmt.Errorf("snapshot member %s: want at<path>@<offset>+<length>", name)
			}
			rec.Off, _ = strconv.ParseInt(m[1], 10, 64)
			rec.N, _ = strconv.Atoi(m[2])
			rec.Path = strings.TrimSuffix(rec.Path, m[0])
		default:
			return nil, fmt.Errorf("snapshot member %s: unknown operation %q", name, rec.Op)
		}
		s.Files[rec.key()] = rec
	}
	for slug, rec := range bySlug {
		if len(rec.Argv) == 0 {
			return nil, fmt.Errorf("snapshot: command %s has no argv member", slug)
		}
		s.Commands[Cmd{Name: rec.Argv[0], Args: rec.Argv[1:]}.String()] = *rec
	}
	return s, nil
}

// MaxSnapshotSize bounds the node snapshot ReadSnapshotFile reads: the
// largest one captured from the test guest (a VDO pool stack, with every
// sysfs file the probes read) is 0.25 MiB, so 64 MiB, 256 times that, holds
// a host with hundreds of times its LVs and PVs, and still refuses
// /dev/zero or a log passed by mistake before keel's memory grows with it.
const MaxSnapshotSize = 64 << 20

// ReadSnapshotFile reads and parses a snapshot file: a regular file (by
// stat, before it is opened, so that a FIFO does not block the open) of at
// most MaxSnapshotSize bytes, read no further than that bound should it
// grow meanwhile.
func ReadSnapshotFile(name string) (*Snapshot, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("snapshot %s: not a regular file (%s); pass a file written by keel snapshot", name, fileKind(fi.Mode()))
	}
	if fi.Size() > MaxSnapshotSize {
		return nil, tooLarge(name, fi.Size())
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxSnapshotSize+1))
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if len(b) > MaxSnapshotSize {
		return nil, tooLarge(name, int64(len(b)))
	}
	s, err := ParseSnapshot(b)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", name, err)
	}
	return s, nil
}

// tooLarge is the error for a snapshot file above MaxSnapshotSize (size
// bytes, or at least that many when it grew while read).
func tooLarge(name string, size int64) error {
	return fmt.Errorf("snapshot %s: %d bytes, more than a node snapshot holds (at most %d MiB); pass a file written by keel snapshot",
		name, size, MaxSnapshotSize>>20)
}

// fileKind names the kind of a file that is not regular, as ls -l's first
// letter tells it.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + m.String()
}

// NodeSource returns the Source for a reading command: the replay of the
// snapshot file node, or the live host (commands bounded by timeout, opt
// as Live takes them) when node is "".
func NodeSource(node string, timeout time.Duration, opt LiveOptions) (Source, error) {
	if node == "" {
		return Live("/", timeout, opt), nil
	}
	s, err := ReadSnapshotFile(node)
	if err != nil {
		return Source{}, err
	}
	return Replay(s), nil
}
