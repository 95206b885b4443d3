// Package uevent listens to the kernel's device events (a
// NETLINK_KOBJECT_UEVENT socket, the same stream `udevadm monitor --kernel`
// shows) so the daemon hears at once when a bcache device is registered
// again — after a reboot, a re-plug or a stop and register — and the kernel
// has forgotten every tunable not kept in the superblock.
package uevent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Event is one kernel uevent.
type Event struct {
	Action    string // add, remove, change, move, online, offline, bind, unbind
	DevPath   string // /devices/virtual/block/bcache0
	Subsystem string
	Seq       uint64
	// Env holds every KEY=VALUE of the event (ACTION, DEVNAME, DRIVER,
	// CACHED_UUID, …).
	Env map[string]string
}

// Parse decodes one datagram of the kernel's uevent netlink group:
// "ACTION@DEVPATH" then NUL-separated KEY=VALUE pairs. Messages re-broadcast
// by udev (they start with "libudev") are rejected: keel listens to the
// kernel, which does not depend on udev having run.
func Parse(b []byte) (Event, error) {
	if bytes.HasPrefix(b, []byte("libudev\x00")) {
		return Event{}, errors.New("uevent: udev message, not a kernel one")
	}
	parts := bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0})
	head := string(parts[0])
	action, devpath, ok := strings.Cut(head, "@")
	if !ok || action == "" || !strings.HasPrefix(devpath, "/") {
		return Event{}, fmt.Errorf("uevent: bad header %q", head)
	}
	e := Event{Action: action, DevPath: devpath, Env: map[string]string{}}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(string(p), "=")
		if !ok {
			return Event{}, fmt.Errorf("uevent %s: bad field %q", head, p)
		}
		e.Env[k] = v
	}
	if a := e.Env["ACTION"]; a != "" && a != action {
		return Event{}, fmt.Errorf("uevent %s: ACTION=%s disagrees with the header", head, a)
	}
	e.Subsystem = e.Env["SUBSYSTEM"]
	if s, ok := e.Env["SEQNUM"]; ok {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return Event{}, fmt.Errorf("uevent %s: SEQNUM %q: %w", head, s, err)
		}
		e.Seq = n
	}
	return e, nil
}

// BcacheRegistered reports whether e says a bcache device has (re)appeared:
// an add or change of a block device named bcacheN. The change event that
// follows registration carries DRIVER=bcache and CACHED_UUID, the backing
// device's UUID.
func (e Event) BcacheRegistered() bool {
	if e.Subsystem != "block" || (e.Action != "add" && e.Action != "change") {
		return false
	}
	return strings.HasPrefix(e.Env["DEVNAME"], "bcache") || e.Env["DRIVER"] == "bcache"
}

// Listener is an open uevent socket. It is non-blocking and waits in Go's
// network poller, so an idle listener costs no CPU (no periodic wake-up).
type Listener struct {
	f       *os.File
	rc      syscall.RawConn
	ignored atomic.Uint64
}

// Ignored counts the messages Run dropped because the kernel did not send
// them.
func (l *Listener) Ignored() uint64 { return l.ignored.Load() }

// Listen opens a socket on the kernel's uevent multicast group. It needs
// no privilege on most kernels but keel runs as root anyway.
func Listen() (*Listener, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_KOBJECT_UEVENT)
	if err != nil {
		return nil, fmt.Errorf("uevent socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: 1}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("uevent bind: %w", err)
	}
	f := os.NewFile(uintptr(fd), "uevent")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("uevent socket: %w", err)
	}
	return &Listener{f: f, rc: rc}, nil
}

// Close closes the socket.
func (l *Listener) Close() error { return l.f.Close() }

// Run reads events until ctx ends and passes each one that parses to fn.
// Events lost to a full receive buffer (ENOBUFS) are reported to onErr;
// the caller should resync then.
func (l *Listener) Run(ctx context.Context, fn func(Event), onErr func(error)) error {
	buf := make([]byte, 64<<10)
	// A cancelled context ends the wait in the poller.
	stop := context.AfterFunc(ctx, func() { l.f.SetReadDeadline(time.Now()) })
	defer stop()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var n int
		var from unix.Sockaddr
		var err error
		if werr := l.rc.Read(func(fd uintptr) bool {
			n, from, err = unix.Recvfrom(int(fd), buf, 0)
			return !errors.Is(err, unix.EAGAIN) // EAGAIN: wait until readable
		}); werr != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("uevent receive: %w", werr)
		}
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			onErr(fmt.Errorf("uevent receive: %w", err))
			if errors.Is(err, unix.ENOBUFS) {
				continue
			}
			return err
		}
		// Only the kernel sends on its uevent group (port id 0, as
		// lib/kobject_uevent.c broadcasts from the kernel's own socket). A
		// root process can send there too; systemd's device monitor drops
		// such messages for the same reason (sd-device/device-monitor.c).
		if sa, ok := from.(*unix.SockaddrNetlink); !ok || sa.Pid != 0 {
			l.ignored.Add(1)
			continue
		}
		e, err := Parse(buf[:n])
		if err != nil {
			onErr(err)
			continue
		}
		fn(e)
	}
}
