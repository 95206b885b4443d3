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

func send(state string) error {
	_, err := daemon.SdNotify(false, state)
	return err
}

// Ready says the service is up, with a status line.
func Ready(status string) error {
	return send(daemon.SdNotifyReady + "\nSTATUS=" + oneLine(status))
}

// Status updates the status line.
func Status(status string) error { return send("STATUS=" + oneLine(status)) }

// Reloading says a reload has begun (Type=notify-reload wants the
// monotonic timestamp with it); call Ready when it is done.
func Reloading() error {
	return send(daemon.SdNotifyReloading + "\n" + daemon.SdNotifyMonotonicUsec())
}

// Stopping says the service is shutting down.
func Stopping() error { return send(daemon.SdNotifyStopping) }

// Watchdog pings the watchdog. Call it from the reconcile loop itself, so
// a hung loop stops the pings and systemd restarts the service.
func Watchdog() error { return send(daemon.SdNotifyWatchdog) }

// WatchdogInterval returns how often to ping (half of WatchdogSec), or 0
// when the watchdog is off.
func WatchdogInterval() time.Duration {
	d, err := daemon.SdWatchdogEnabled(false)
	if err != nil || d <= 0 {
		return 0
	}
	return d / 2
}
