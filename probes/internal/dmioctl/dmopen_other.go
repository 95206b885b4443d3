//go:build !linux

package dmioctl

import "fmt"

// OpenCount is Linux-only.
func OpenCount(name string) (int, error) {
	return 0, fmt.Errorf("dm device %s: open count: device-mapper ioctls are linux-only", name)
}
