package probes

import "github.com/keel-storage/keel/probes/internal/dmioctl"

// DMOpenCount returns how many times the device-mapper device name (e.g.
// "vg-lv", as in /dev/mapper) is open right now, through DM_DEV_STATUS on
// /dev/mapper/control: what `dmsetup info -c -o open` prints. It is the
// open count at the moment it is called, for the checks just before a
// destructive write (lv_attr's open flag is the same number, read when
// LVM reported).
func DMOpenCount(name string) (int, error) { return dmioctl.OpenCount(name) }
