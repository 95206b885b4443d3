package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/internal/notify"
)

// Past its bound with an activation command still running, keel activate
// tells systemd READY (the guests start) naming the command it still waits
// for, and does not kill it; before the bound it sends no READY.
func TestActivationWatchReleasesAtTheBound(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	n := notify.Sender{Send: func(s string) error {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, s)
		return nil
	}}
	var stderr bytes.Buffer
	w := newActivationWatch(time.Now(), 100*time.Millisecond, 50*time.Millisecond, n, hclog.NewNullLogger(), &stderr)
	w.running([]string{"vgchange", "-aay", "vdovg"})
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	early := len(sent)
	mu.Unlock()
	if early != 0 {
		t.Errorf("sent before the bound: %q", sent)
	}
	time.Sleep(250 * time.Millisecond)
	w.stop()
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 1 || !strings.HasPrefix(sent[0], "READY=1\nSTATUS=past its bound of 100ms") ||
		!strings.Contains(sent[0], "running vgchange -aay vdovg (never killed) for") {
		t.Errorf("sent %q", sent)
	}
	if !strings.Contains(stderr.String(), "keel activate: past its bound of 100ms") {
		t.Errorf("stderr %q", stderr.String())
	}
}

// An activation that ends before the bound sends nothing from the watch.
func TestActivationWatchQuietWhenDone(t *testing.T) {
	var sent []string
	n := notify.Sender{Send: func(s string) error { sent = append(sent, s); return nil }}
	w := newActivationWatch(time.Now(), 50*time.Millisecond, 10*time.Millisecond, n, hclog.NewNullLogger(), &bytes.Buffer{})
	w.stop()
	time.Sleep(100 * time.Millisecond)
	if len(sent) != 0 {
		t.Errorf("sent %q", sent)
	}
}
