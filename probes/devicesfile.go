package probes

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
)

// Files of LVM's config cascade and devices file that the probe reads
// besides lvm.conf.
const (
	lvmLocalConfPath = "/etc/lvm/lvmlocal.conf"
	lvmDevicesDir    = "/etc/lvm/devices"
	// defaultDevicesFile is devices/devicesfile's default (lvm2
	// lib/config/defaults.h, DEFAULT_DEVICES_FILE).
	defaultDevicesFile = "system.devices"
)

// absent reports whether a read found no file: it does not exist, or a
// replayed snapshot recorded before keel read it did not record it (that
// keel never read it, so it judged the host without it).
func absent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, hostio.ErrNotRecorded)
}

// readLVMCascade reads lvmlocal.conf and the devices file into cfg;
// a file that does not exist is no error.
func readLVMCascade(fsys hostio.FS, cfg *model.LVMConfig) {
	if b, err := fsys.ReadFile(lvmLocalConfPath); err == nil {
		cfg.LVMLocalConf = string(b)
	} else if !absent(err) {
		cfg.Errors = append(cfg.Errors, fmt.Sprintf("%s: %v", lvmLocalConfPath, err))
	}
	name := defaultDevicesFile
	if l := lvm.ConfigList(cfg.Values["devices/devicesfile"]); len(l) == 1 && l[0] != "" {
		name = l[0]
	}
	// lvm2 takes the name under LVM_SYSTEM_DIR/devices (device_id.c,
	// _devices_file_path).
	p := path.Join(lvmDevicesDir, name)
	b, err := fsys.ReadFile(p)
	switch {
	case absent(err):
	case err != nil:
		cfg.Errors = append(cfg.Errors, fmt.Sprintf("%s: %v", p, err))
	default:
		cfg.DevicesFile = &model.DevicesFile{Path: p, Entries: ParseDevicesFile(b)}
	}
}

// ParseDevicesFile reads the entries of an LVM devices file as lvm2 does
// (lib/device/device_id.c, device_ids_read): comment lines and the
// VERSION, SYSTEMID and HOSTNAME lines are skipped, a line needs IDTYPE= and
// IDNAME=, each field's value runs to the next space, and a value "." or
// "" is unset.
func ParseDevicesFile(b []byte) []model.DeviceEntry {
	var out []model.DeviceEntry
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		fields := map[string]string{}
		for _, f := range strings.Fields(line) {
			if k, v, ok := strings.Cut(f, "="); ok && v != "." {
				fields[k] = v
			}
		}
		if _, ok := fields["IDTYPE"]; !ok {
			continue
		}
		if _, ok := fields["IDNAME"]; !ok {
			continue
		}
		out = append(out, model.DeviceEntry{IDType: fields["IDTYPE"], IDName: fields["IDNAME"],
			DevName: fields["DEVNAME"], PVID: fields["PVID"], Part: fields["PART"]})
	}
	return out
}
