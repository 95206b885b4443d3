// Package logging builds keel's hclog logger: structured key/value lines on
// stderr, or, when stderr is connected to the journal, native journald
// entries whose fields are the log line's keys (FINDING=, OBJECT=, VG=…) and
// whose PRIORITY follows the level, or a finding's severity when the line
// carries one. Then `journalctl -u keel FINDING=lvm.scan_lvs -p warning`
// works.
package logging

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/coreos/go-systemd/v22/journal"
	"github.com/hashicorp/go-hclog"
)

// DefaultSocket is journald's native protocol socket.
const DefaultSocket = "/run/systemd/journal/socket"

// Syslog priorities used in PRIORITY=.
const (
	PriCrit    = 2
	PriErr     = 3
	PriWarning = 4
	PriInfo    = 6
	PriDebug   = 7
)

// JournalSink is an hclog sink that sends each line to journald over the
// native protocol. Lines below its level are dropped (hclog calls sinks for
// every line, whatever the logger's level). Safe for concurrent use.
type JournalSink struct {
	// Identifier is SYSLOG_IDENTIFIER.
	Identifier string
	level      hclog.Level
	conn       *net.UnixConn
	addr       *net.UnixAddr
	mu         sync.Mutex
	// Dropped counts entries journald did not take (too large, socket gone).
	Dropped atomic.Uint64
}

var _ hclog.SinkAdapter = (*JournalSink)(nil)

// NewJournalSink returns a sink sending to the journald socket at path.
func NewJournalSink(path, identifier string, level hclog.Level) (*JournalSink, error) {
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: "", Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("journal socket %s: %w", path, err)
	}
	return &JournalSink{Identifier: identifier, level: level, conn: conn, addr: &net.UnixAddr{Name: path, Net: "unixgram"}}, nil
}

// Close releases the sink's socket.
func (s *JournalSink) Close() error { return s.conn.Close() }

// Accept implements hclog.SinkAdapter.
func (s *JournalSink) Accept(name string, level hclog.Level, msg string, args ...interface{}) {
	if level < s.level || level == hclog.Off {
		return
	}
	var b bytes.Buffer
	pri := priority(level)
	fields := map[string]bool{}
	for i := 0; i+1 < len(args); i += 2 {
		k := FieldName(fmt.Sprint(args[i]))
		v := value(args[i+1])
		if k == "SEVERITY" {
			if p, ok := severityPriority(v); ok {
				pri = p
			}
		}
		if fields[k] || reserved[k] {
			k = "F_" + k
		}
		fields[k] = true
		appendField(&b, k, v)
	}
	appendField(&b, "MESSAGE", msg)
	appendField(&b, "PRIORITY", fmt.Sprint(pri))
	appendField(&b, "SYSLOG_IDENTIFIER", s.Identifier)
	if name != "" {
		appendField(&b, "LOGGER", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.conn.WriteToUnix(b.Bytes(), s.addr); err != nil {
		s.Dropped.Add(1)
	}
}

// reserved are journal fields keel sets itself; a log key with the same
// name is sent as F_<name>.
var reserved = map[string]bool{"MESSAGE": true, "PRIORITY": true, "SYSLOG_IDENTIFIER": true, "LOGGER": true}

func value(v interface{}) string {
	switch x := v.(type) {
	case error:
		return x.Error()
	case hclog.Format:
		if len(x) > 0 {
			if f, ok := x[0].(string); ok {
				return fmt.Sprintf(f, x[1:]...)
			}
		}
		return fmt.Sprint([]interface{}(x)...)
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}

// appendField writes one field in the native protocol: KEY=value\n, or,
// for a value with a newline, KEY\n, its length as 64-bit little endian,
// the value and \n.
func appendField(b *bytes.Buffer, k, v string) {
	if !strings.ContainsRune(v, '\n') {
		b.WriteString(k + "=" + v + "\n")
		return
	}
	b.WriteString(k + "\n")
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(v)))
	b.Write(n[:])
	b.WriteString(v + "\n")
}

func priority(l hclog.Level) int {
	switch {
	case l >= hclog.Error:
		return PriErr
	case l == hclog.Warn:
		return PriWarning
	case l == hclog.Info:
		return PriInfo
	}
	return PriDebug
}

func severityPriority(s string) (int, bool) {
	switch s {
	case "critical":
		return PriCrit, true
	case "error":
		return PriErr, true
	case "warning":
		return PriWarning, true
	case "info":
		return PriInfo, true
	}
	return 0, false
}

// FieldName maps a log key ("thin-pool", "finding") to a journal field
// name: upper case, anything outside [A-Z0-9_] becomes '_', leading '_'
// removed (those are journald's trusted fields), "F_" prefixed when empty
// or starting with a digit.
func FieldName(k string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(k) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	n := strings.TrimLeft(b.String(), "_")
	if n == "" || (n[0] >= '0' && n[0] <= '9') {
		n = "F_" + n
	}
	return n
}

// Options choose the logger's destination.
type Options struct {
	Name  string
	Level hclog.Level
	// Stderr is where lines go when the journal is not used.
	Stderr io.Writer
	// JSON writes JSON lines instead of key=value text on Stderr.
	JSON bool
	// Journal forces (true) or forbids (false) journald; nil decides from
	// JOURNAL_STREAM, as systemd sets it when stderr is the journal.
	Journal *bool
	// Socket overrides DefaultSocket (for tests).
	Socket string
}

// New returns the logger and, when journald is used, its sink (whose
// Dropped counter is worth exporting).
func New(o Options) (hclog.InterceptLogger, *JournalSink) {
	useJournal := false
	if o.Journal != nil {
		useJournal = *o.Journal
	} else if ok, _ := journal.StderrIsJournalStream(); ok {
		useJournal = true
	}
	if useJournal {
		sock := o.Socket
		if sock == "" {
			sock = DefaultSocket
		}
		if s, err := NewJournalSink(sock, o.Name, o.Level); err == nil {
			// The base logger writes nowhere (no duplicates on stderr) but
			// keeps its level, so IsDebug() still tells the truth.
			l := hclog.NewInterceptLogger(&hclog.LoggerOptions{Name: o.Name, Level: o.Level, Output: io.Discard})
			l.RegisterSink(s)
			return l, s
		}
	}
	return hclog.NewInterceptLogger(&hclog.LoggerOptions{Name: o.Name, Level: o.Level, Output: o.Stderr, JSONFormat: o.JSON}), nil
}
