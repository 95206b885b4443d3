package dmioctl

import "fmt"

// The open count of a device-mapper device is the number of times its block
// device is open: every open(2) of the node, O_EXCL or not, and every
// device-mapper table or kernel holder that uses it. lv_attr's open flag is
// the same number, read by LVM when it reports; OpenCount reads it at the
// moment it is called, for the checks just before a destructive write.

const (
	dmIoctlDevStatus = 0xc138fd07 // DM_DEV_STATUS: _IOWR(0xfd, 7, struct dm_ioctl)
	offOpenCount     = 24         // struct dm_ioctl: __s32 open_count
)

// dmOpenCount asks for the status of the device named name and returns its
// open count.
func dmOpenCount(call Caller, name string) (int, error) {
	b, err := call(dmIoctlDevStatus, dmVersion4, name, dmFlagExists, nil)
	if err != nil {
		return 0, fmt.Errorf("dm device %s: status: %w", name, err)
	}
	if len(b) < HeaderSize {
		return 0, fmt.Errorf("dm device %s: status: reply of %d bytes, want at least %d", name, len(b), HeaderSize)
	}
	n := int32(ne.Uint32(b[offOpenCount:]))
	if n < 0 {
		return 0, fmt.Errorf("dm device %s: status: negative open count %d", name, n)
	}
	return int(n), nil
}
