//go:build !linux

package probes

import "errors"

// dmRead is Linux-only; elsewhere DMRunner always runs dmsetup.
func dmRead(string, string, string) ([]byte, error) {
	return nil, errors.New("device-mapper ioctls: not on linux")
}
