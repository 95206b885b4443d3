// Package notify tells systemd how the keel daemon is doing (sd_notify):
// READY once the first pass is done, a one-line STATUS after each pass,
// RELOADING around a SIGHUP reload, and WATCHDOG pings. Outside systemd
// (no NOTIFY_SOCKET) every call is a no-op.
package notify

import (
	"strings"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// oneLine keeps a status to one line: systemd shows STATUS= as is.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Sender sends the notifications: to systemd when Send is nil (the zero
// Sender), else to Send, which sees each message as systemd would.
type Sender struct {
	Send func(state string) error
}

func (s Sender) send(state string) error {
	if s.Send != nil {
		return s.Send(state)
	}
	_, err := daemon.SdNotify(false, state)
	return err
}

// Ready says the service is up, with a status line.
func (s Sender) Ready(status string) error {
	return s.send(daemon.SdNotifyReady + "\nSTATUS=" + oneLine(status))
}

// Status updates the status line.
func (s Sender) Status(status string) error { return s.send("STATUS=" + oneLine(status)) }

// Reloading says a reload has begun (Type=notify-reload wants the
// monotonic timestamp with it); call Ready when it is done.
func (s Sender) Reloading() error {
	return s.send(daemon.SdNotifyReloading + "\n" + daemon.SdNotifyMonotonicUsec())
}

// Stopping says the service is shutting down.
func (s Sender) Stopping() error { return s.send(daemon.SdNotifyStopping) }

// Watchdog pings the watchdog. Call it from the reconcile loop itself, so
// a hung loop stops the pings and systemd restarts the service.
func (s Sender) Watchdog() error { return s.send(daemon.SdNotifyWatchdog) }

// Ready says the service is up, with a status line, to systemd.
func Ready(status string) error { return Sender{}.Ready(status) }

// Status updates the status line systemd shows.
func Status(status string) error { return Sender{}.Status(status) }

// Reloading tells systemd a reload has begun.
func Reloading() error { return Sender{}.Reloading() }

// Stopping tells systemd the service is shutting down.
func Stopping() error { return Sender{}.Stopping() }

// Watchdog pings systemd's watchdog.
func Watchdog() error { return Sender{}.Watchdog() }

// WatchdogInterval returns how often to ping (half of WatchdogSec), or 0
// when the watchdog is off.
func WatchdogInterval() time.Duration {
	d, err := daemon.SdWatchdogEnabled(false)
	if err != nil || d <= 0 {
		return 0
	}
	return d / 2
}
