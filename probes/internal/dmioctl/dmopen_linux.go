package dmioctl

import (
	"fmt"
	"os"
	"syscall"
)

// OpenCount returns how many times the device-mapper device name (e.g.
// "vg-lv", as in /dev/mapper) is open right now, through DM_DEV_STATUS on
// /dev/mapper/control: what `dmsetup info -c -o open` prints.
func OpenCount(name string) (int, error) {
	f, err := os.OpenFile(Control, os.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("dm device %s: %w", name, err)
	}
	defer f.Close()
	return dmOpenCount(IoctlCaller(f.Fd()), name)
}
