package logging

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/internal/testsock"
)

// fakeJournal listens where journald would and decodes native-protocol
// datagrams into field maps.
func fakeJournal(t *testing.T) (string, func() map[string]string) {
	t.Helper()
	path, next := testsock.Listen(t)
	return path, func() map[string]string {
		t.Helper()
		return decode(t, next())
	}
}

func decode(t *testing.T, b []byte) map[string]string {
	m := map[string]string{}
	for len(b) > 0 {
		nl := bytes.IndexByte(b, '\n')
		if nl < 0 {
			t.Fatalf("field without newline: %q", b)
		}
		line := string(b[:nl])
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
			b = b[nl+1:]
			continue
		}
		n := binary.LittleEndian.Uint64(b[nl+1 : nl+9])
		m[line] = string(b[nl+9 : nl+9+int(n)])
		if b[nl+9+int(n)] != '\n' {
			t.Fatal("binary field not followed by newline")
		}
		b = b[nl+10+int(n):]
	}
	return m
}

func TestJournalSinkFields(t *testing.T) {
	sock, next := fakeJournal(t)
	on := true
	log, sink := New(Options{Name: "keel", Level: hclog.Info, Journal: &on, Socket: sock})
	if sink == nil {
		t.Fatal("journal not used")
	}
	log.Named("reconcile").With("vg", "vg0").Warn("thin pool nearly full", "thin-pool", "pool0", "data_percent", 91.5, "err", errors.New("boom"))
	m := next()
	want := map[string]string{"PRIORITY": "4", "MESSAGE": "thin pool nearly full", "LOGGER": "keel.reconcile", "VG": "vg0",
		"THIN_POOL": "pool0", "DATA_PERCENT": "91.5", "ERR": "boom", "SYSLOG_IDENTIFIER": "keel"}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, m[k], v, m)
		}
	}
	// A finding's severity sets the priority: critical is 2 although
	// hclog has no such level.
	log.Error("finding raised", "finding", "vdo.used", "object", "vg0/vpool", "severity", "critical", "message", "line one\nline two")
	m = next()
	if m["PRIORITY"] != "2" || m["FINDING"] != "vdo.used" || m["OBJECT"] != "vg0/vpool" || m["F_MESSAGE"] != "line one\nline two" || m["MESSAGE"] != "finding raised" {
		t.Errorf("got %v", m)
	}
	// Below the level: nothing is sent; the next datagram is the Info line.
	log.Debug("noise")
	log.Info("pass done", "actions", 0)
	if m = next(); m["MESSAGE"] != "pass done" || m["PRIORITY"] != "6" {
		t.Errorf("got %v", m)
	}
	if log.IsDebug() || !log.IsInfo() {
		t.Error("levels not kept on the base logger")
	}
}

func TestStderrWhenNotJournal(t *testing.T) {
	var buf bytes.Buffer
	off := false
	log, sink := New(Options{Name: "keel", Level: hclog.Info, Journal: &off, Stderr: &buf})
	if sink != nil {
		t.Fatal("journal used")
	}
	log.Warn("config.invalid", "path", "/etc/keel", "err", "x")
	if s := buf.String(); !strings.Contains(s, "[WARN]  keel: config.invalid: path=/etc/keel err=x") {
		t.Fatalf("got %q", s)
	}
}

func TestFieldName(t *testing.T) {
	for in, want := range map[string]string{"thin-pool": "THIN_POOL", "_x": "X", "9lives": "F_9LIVES", "": "F_", "a.b": "A_B"} {
		if got := FieldName(in); got != want {
			t.Errorf("FieldName(%q) = %q, want %q", in, got, want)
		}
	}
}
