package probes

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// sysFS is a /sys/block of a few devices whose suspended attribute reads
// from a function, for the pass's wait.
type sysFS struct {
	devs      []string
	names     map[string]string
	suspended func(dev string) string
}

func (f sysFS) ReadFile(name string) ([]byte, error) {
	rest, ok := strings.CutPrefix(name, sysBlock+"/")
	if !ok {
		return nil, fs.ErrNotExist
	}
	dev, attr, _ := strings.Cut(rest, "/")
	switch attr {
	case "dm/suspended":
		return []byte(f.suspended(dev) + "\n"), nil
	case "dm/name":
		return []byte(f.names[dev] + "\n"), nil
	}
	return nil, fs.ErrNotExist
}

func (f sysFS) ReadDir(name string) ([]string, error) {
	if name != sysBlock {
		return nil, fs.ErrNotExist
	}
	return f.devs, nil
}

func (sysFS) Readlink(string) (string, error)           { return "", fs.ErrNotExist }
func (sysFS) ReadAt(string, int64, int) ([]byte, error) { return nil, fs.ErrNotExist }

// TestStuckSuspended: a device LVM resumes within the wait is not stuck;
// one still suspended after it is, by its device-mapper name; a device
// that is not device-mapper's is never read.
func TestStuckSuspended(t *testing.T) {
	reads := map[string]int{}
	f := sysFS{
		devs:  []string{"dm-0", "dm-1", "dm-2", "sda"},
		names: map[string]string{"dm-0": "kvg-vsplit", "dm-1": "kvg-other", "dm-2": "kvg-tkeep"},
		suspended: func(dev string) string {
			reads[dev]++
			switch {
			case dev == "sda":
				t.Errorf("read the suspended attribute of %s", dev)
			case dev == "dm-1", dev == "dm-0" && reads[dev] < 3:
				return "1"
			}
			return "0"
		},
	}
	got := suspendedNames(stuckSuspended(context.Background(), f, 350*time.Millisecond))
	if !slices.Equal(got, []string{"kvg-other"}) {
		t.Errorf("stuck %q, want [kvg-other] (kvg-vsplit was resumed during the wait)", got)
	}
	if reads["dm-0"] < 3 {
		t.Errorf("kvg-vsplit read %d times: the pass did not wait for it", reads["dm-0"])
	}
	none := sysFS{devs: []string{"dm-0"}, names: map[string]string{"dm-0": "a"}, suspended: func(string) string { return "0" }}
	if got := stuckSuspended(context.Background(), none, time.Hour); got != nil {
		t.Errorf("stuck %q with nothing suspended", got)
	}
	// A replay (wait 0) takes what it recorded.
	if got := suspendedNames(stuckSuspended(context.Background(), sysFS{devs: []string{"dm-4"}, names: map[string]string{},
		suspended: func(string) string { return "1" }}, 0)); !slices.Equal(got, []string{"dm-4"}) {
		t.Errorf("stuck %q, want the kernel name when dm/name is empty", got)
	}
}

// TestWithDevices: the list goes before "--", which ends the options of
// the retry's VG list, and leaves the shared command alone.
func TestWithDevices(t *testing.T) {
	devs := []string{"/dev/dm-1", "/dev/sda"}
	a := withDevices(retryCmd([]string{"lv_name"}, []string{"vg1"}), devs).Args
	at, d := slices.Index(a, "--"), slices.Index(a, "--devices")
	if d < 0 || at < 0 || d > at || a[d+1] != "/dev/dm-1,/dev/sda" || a[len(a)-1] != "vg1" {
		t.Errorf("args %q", a)
	}
	if got := withDevices(fullReportCmd, devs).Args; got[len(got)-2] != "--devices" {
		t.Errorf("args %q", got)
	}
	if slices.Contains(fullReportCmd.Args, "--devices") {
		t.Error("withDevices changed fullReportCmd")
	}
}

// TestReadableDevices: the stuck device and everything stacked on it
// (holders, followed up) are left out; disks, partitions and other devices
// stay.
func TestReadableDevices(t *testing.T) {
	f := treeFS{
		sysClassBlock:              {"dm-0", "dm-1", "dm-2", "dm-3", "sda", "sda1"},
		sysBlock + "/dm-1/holders": {"dm-2"},
		sysBlock + "/dm-2/holders": {"dm-3"},
		sysBlock + "/dm-0/holders": {},
	}
	got, err := readableDevices(f, map[string]string{"dm-1": "kvg-vsplit_vdata"})
	if err != nil || !slices.Equal(got, []string{"/dev/dm-0", "/dev/sda", "/dev/sda1"}) {
		t.Errorf("readable %q, %v", got, err)
	}
}

// treeFS answers ReadDir from a map.
type treeFS map[string][]string

func (f treeFS) ReadDir(name string) ([]string, error) {
	if v, ok := f[name]; ok {
		return v, nil
	}
	return nil, fs.ErrNotExist
}
func (treeFS) ReadFile(string) ([]byte, error)           { return nil, fs.ErrNotExist }
func (treeFS) Readlink(string) (string, error)           { return "", fs.ErrNotExist }
func (treeFS) ReadAt(string, int64, int) ([]byte, error) { return nil, fs.ErrNotExist }

// procFS is a /proc of a few processes by PID and cmdline.
type procFS map[string]string

func (f procFS) ReadFile(name string) ([]byte, error) {
	rest, ok := strings.CutPrefix(name, procDir+"/")
	pid, file, _ := strings.Cut(rest, "/")
	if c, known := f[pid]; ok && known && file == "cmdline" {
		return []byte(c), nil
	}
	return nil, fs.ErrNotExist
}

func (f procFS) ReadDir(name string) ([]string, error) {
	if name != procDir {
		return nil, fs.ErrNotExist
	}
	return append(slices.Sorted(maps.Keys(f)), "self", "gone"), nil
}

func (procFS) Readlink(string) (string, error)           { return "", fs.ErrNotExist }
func (procFS) ReadAt(string, int64, int) ([]byte, error) { return nil, fs.ErrNotExist }

// TestLVMCommands: LVM's commands and dmsetup are listed with their
// arguments, by PID; lvm2's daemons, Proxmox VE's pve* daemons and other
// processes are not; a process gone before its cmdline is read is skipped.
func TestLVMCommands(t *testing.T) {
	f := procFS{
		"12":  "/usr/sbin/lvmpolld\x00-t\x0060\x00",
		"7":   "/usr/sbin/lvm\x00lvpoll\x00--polloperation\x00pvmove\x00vg/pvmove0\x00",
		"40":  "dmsetup\x00suspend\x00vg-lv\x00",
		"41":  "pvestatd\x00",
		"42":  "lvcreate\x00-s\x00vg/lv\x00",
		"43":  "bash\x00",
		"44":  "",
		"300": "/sbin/vgs\x00",
	}
	got := lvmCommands(f)
	want := []string{"7 /usr/sbin/lvm lvpoll --polloperation pvmove vg/pvmove0", "40 dmsetup suspend vg-lv", "42 lvcreate -s vg/lv", "300 /sbin/vgs"}
	var lines []string
	for _, c := range got {
		lines = append(lines, fmt.Sprintf("%d %s", c.PID, strings.Join(c.Argv, " ")))
	}
	if !slices.Equal(lines, want) {
		t.Errorf("lvmCommands:\n got %q\nwant %q", lines, want)
	}
}
