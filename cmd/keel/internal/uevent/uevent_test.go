package uevent

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/internal/testenv"
	"golang.org/x/sys/unix"
)

// The datagrams in testdata were received in the test guest by
// e2e/apply/ueventcap while e2e/apply/capture.sh created a bcache device,
// stopped it and registered it again; udevadm-monitor.txt is
// `udevadm monitor --kernel --property` of the same run.
func captures(t *testing.T) map[string][]byte {
	t.Helper()
	files, _ := filepath.Glob("testdata/uevent-*.bin")
	if len(files) != 11 {
		t.Fatalf("%d captures", len(files))
	}
	m := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m[filepath.Base(f)] = b
	}
	return m
}

func TestParseCaptured(t *testing.T) {
	var registered []string
	var seqs []uint64
	caps := captures(t)
	names := make([]string, 0, len(caps))
	for n := range caps {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		e, err := Parse(caps[n])
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		seqs = append(seqs, e.Seq)
		if e.BcacheRegistered() {
			registered = append(registered, n+" "+e.Action+" "+e.Env["CACHED_UUID"])
		}
	}
	want := []string{
		"uevent-003.bin add ",
		"uevent-004.bin change a3a774bf-718d-42bf-91f4-0c3a540d40f1",
		"uevent-009.bin add ",
		"uevent-010.bin change a3a774bf-718d-42bf-91f4-0c3a540d40f1",
	}
	if strings.Join(registered, "|") != strings.Join(want, "|") {
		t.Fatalf("bcache registrations %q, want %q", registered, want)
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Fatalf("sequence numbers %v", seqs)
		}
	}
	e, _ := Parse(caps["uevent-007.bin"])
	if e.Action != "remove" || e.DevPath != "/devices/virtual/block/bcache0" || e.Subsystem != "block" || e.BcacheRegistered() {
		t.Fatalf("remove event %+v", e)
	}
	// Every event also shows in udevadm's own rendering of the same run.
	mon, _ := os.ReadFile("testdata/udevadm-monitor.txt")
	for _, n := range names {
		e, _ := Parse(caps[n])
		if !strings.Contains(string(mon), "SEQNUM="+e.Env["SEQNUM"]+"\n") {
			t.Errorf("%s: SEQNUM %s not in udevadm's log", n, e.Env["SEQNUM"])
		}
	}
}

func TestParseRejects(t *testing.T) {
	good := captures(t)["uevent-004.bin"]
	for _, b := range [][]byte{
		append([]byte("libudev\x00"), good...),
		[]byte("nonsense"),
		[]byte("add@/x\x00NOEQUALS"),
		[]byte("add@/x\x00ACTION=remove"),
		[]byte("add@/x\x00SEQNUM=abc"),
	} {
		if _, err := Parse(b); err == nil {
			t.Errorf("accepted %q", b)
		}
	}
}

// On a host with a uevent socket (this one has one even without
// device-mapper), asking the kernel to resend a device's event must arrive.
// A kernel uevent socket, and root to write a uevent file, are what keel's
// daemon has on every node: as root, lacking either fails the test.
func TestListenReceives(t *testing.T) {
	testenv.NeedRoot(t, "writing a uevent file")
	l, err := Listen()
	if err != nil {
		t.Fatalf("no uevent socket: %v", err)
	}
	defer l.Close()
	trigger := "/sys/devices/virtual/mem/null/uevent"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	got := make(chan Event, 16)
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, func(e Event) { got <- e }, func(error) {}) }()
	if err := os.WriteFile(trigger, []byte("change"), 0); err != nil {
		t.Fatalf("cannot trigger a uevent: %v", err)
	}
	for {
		select {
		case e := <-got:
			if e.DevPath == "/devices/virtual/mem/null" && e.Action == "change" {
				cancel()
				if err := <-done; err != context.Canceled {
					t.Fatalf("Run returned %v", err)
				}
				return
			}
		case <-ctx.Done():
			t.Fatal("no event received")
		}
	}
}

// A message a process (not the kernel) sends to the uevent group is dropped:
// only the kernel's own events reach keel.
func TestListenIgnoresProcessSenders(t *testing.T) {
	testenv.NeedRoot(t, "sending to the uevent group, writing a uevent file")
	l, err := Listen()
	if err != nil {
		t.Fatalf("no uevent socket: %v", err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	got := make(chan Event, 16)
	go l.Run(ctx, func(e Event) { got <- e }, func(error) {})
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_KOBJECT_UEVENT)
	if err != nil {
		t.Fatalf("no uevent socket to send from: %v", err)
	}
	defer unix.Close(fd)
	spoof := "add@/devices/virtual/block/bcache99\x00ACTION=add\x00DEVPATH=/devices/virtual/block/bcache99\x00SUBSYSTEM=block\x00DEVNAME=bcache99\x00SEQNUM=1\x00"
	if err := unix.Sendto(fd, []byte(spoof), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: 1}); err != nil {
		t.Fatalf("cannot send to the uevent group (needs CAP_NET_ADMIN): %v", err)
	}
	// A kernel event after it: once it arrives, the spoofed one was read.
	if err := os.WriteFile("/sys/devices/virtual/mem/null/uevent", []byte("change"), 0); err != nil {
		t.Fatalf("cannot trigger a uevent: %v", err)
	}
	for {
		select {
		case e := <-got:
			if e.DevPath == "/devices/virtual/block/bcache99" {
				t.Fatalf("a message from a process was taken for a kernel uevent: %+v", e)
			}
			if e.DevPath == "/devices/virtual/mem/null" {
				if n := l.Ignored(); n != 1 {
					t.Fatalf("Ignored() = %d, want 1", n)
				}
				return
			}
		case <-ctx.Done():
			t.Fatal("no kernel event received")
		}
	}
}

// An idle listener waits in the poller; cancelling its context ends Run.
func TestRunEndsOnCancel(t *testing.T) {
	l, err := Listen()
	if err != nil {
		t.Fatalf("no uevent socket: %v", err)
	}
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx, func(Event) {}, func(error) {}) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Fatalf("Run returned %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not end after cancel")
	}
}
