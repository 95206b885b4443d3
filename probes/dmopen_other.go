//go:build !linux

package probes

import "fmt"

// DMOpenCount is Linux-only.
func DMOpenCount(name string) (int, error) {
	return 0, fmt.Errorf("dm device %s: open count: device-mapper ioctls are linux-only", name)
}
