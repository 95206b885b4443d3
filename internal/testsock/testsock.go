// Package testsock is a unix datagram listener for tests that stand in for
// journald or systemd's notify socket.
package testsock

import (
	"net"
	"path/filepath"
	"testing"
	"time"
)

// Listen listens on a fresh socket in a test temporary directory and
// returns its path and a function that returns the next datagram, failing
// the test when none arrives within 10 seconds.
func Listen(t testing.TB) (string, func() []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "socket")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return path, func() []byte {
		t.Helper()
		buf := make([]byte, 1<<16)
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("no datagram on %s: %v", path, err)
		}
		return buf[:n]
	}
}
