package model

import "strings"

// Trouble names what the kernel reports wrong with d, or "" when its
// status shows nothing wrong: an error target (every I/O fails), a VDO
// pool not in normal mode ("vdo read-only", "vdo recovering"), a thin pool
// failed, read-only, out of data space or needing a check. The modes are
// dm-vdo's and dm-thin's status fields (the kernel's
// Documentation/admin-guide/device-mapper/vdo.rst and thin-provisioning.rst).
// A status line keel cannot parse is reported as such, never as healthy.
func (d *DMDevice) Trouble() string {
	var out []string
	for _, l := range d.Table {
		if l.Target == "error" {
			out = append(out, "error target")
			break
		}
	}
	for _, l := range d.Status {
		switch l.Target {
		case "vdo":
			s, err := ParseVDOStatus(l.Args)
			switch {
			case err != nil:
				out = append(out, "vdo status unreadable")
			case s.Mode != "normal":
				out = append(out, "vdo "+s.Mode)
			}
		case "thin-pool":
			s, err := ParseThinPoolStatus(l.Args)
			if err != nil {
				out = append(out, "thin-pool status unreadable")
				continue
			}
			for _, c := range []struct {
				bad  bool
				name string
			}{{s.Failed, "thin-pool failed"}, {s.ReadOnly, "thin-pool read-only"},
				{s.OutOfDataSpace, "thin-pool out of data space"}, {s.NeedsCheck, "thin-pool needs_check"}} {
				if c.bad {
					out = append(out, c.name)
				}
			}
		}
	}
	return strings.Join(out, ", ")
}
