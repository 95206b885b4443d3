//go:build !linux

package dmioctl

import "errors"

// Read is Linux-only; elsewhere it fails, and callers run dmsetup instead.
func Read(string, string, string) ([]byte, error) {
	return nil, errors.New("device-mapper ioctls: not on linux")
}
