package probes

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
)

// mdFiles are read from /sys/block/mdN/md/, each as the kernel's
// Documentation/admin-guide/md.rst describes it ("md devices in sysfs").
// /proc/mdstat says the same in a layout meant for people; sysfs gives
// each value a file of its own, and is what the probe already reads and
// records for every block device.
var mdFiles = []string{"level", "array_state", "raid_disks", "degraded", "sync_action", "sync_completed", "mismatch_cnt"}

// isMDName reports whether dev is an md array's kernel name ("md0",
// "md127"), not one of its partitions ("md0p1").
func isMDName(dev string) bool {
	n, ok := strings.CutPrefix(dev, "md")
	return ok && n != "" && strings.Trim(n, "0123456789") == ""
}

// readMD reads the md array dev from sysfs. An array that is not running
// (array_state inactive or clear) has no redundancy files; those missing
// are left at their zero values (Degraded -1).
func readMD(fsys hostio.FS, dev string) *model.MDArray {
	dir := sysBlock + "/" + dev + "/md"
	files, errs := readFiles(fsys, dir, mdFiles)
	a := buildMD(dev, files)
	a.Errors = append(errs, a.Errors...)
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		a.Errors = append(a.Errors, fmt.Sprintf("%s: %v", dir, err))
		return a
	}
	for _, e := range slices.Sorted(slices.Values(ents)) {
		member, ok := strings.CutPrefix(e, "dev-")
		if !ok {
			continue
		}
		st, err := readTrim(fsys, dir+"/"+e+"/state")
		if err != nil {
			a.Errors = append(a.Errors, fmt.Sprintf("%s/%s/state: %v", dir, e, err))
		}
		a.Members = append(a.Members, model.MDMember{Device: member, State: st})
	}
	return a
}

// buildMD turns the files of one array's md directory into an MDArray.
func buildMD(dev string, files map[string]string) *model.MDArray {
	a := &model.MDArray{Device: dev, Level: files["level"], ArrayState: files["array_state"],
		SyncAction: files["sync_action"], Degraded: -1}
	bad := func(field string, err error) {
		a.Errors = append(a.Errors, fmt.Sprintf("md %s: %s: %v", dev, field, err))
	}
	a.RaidDisks = int(uintField(files, "raid_disks", bad))
	if _, ok := files["degraded"]; ok {
		a.Degraded = int(uintField(files, "degraded", bad))
	}
	a.MismatchCount = uintField(files, "mismatch_cnt", bad)
	// sync_completed is "none" when no sync runs, else "done / total" in
	// sectors (md.rst).
	if sc, ok := files["sync_completed"]; ok && sc != "none" {
		done, total, found := strings.Cut(sc, "/")
		d, derr := strconv.ParseUint(strings.TrimSpace(done), 10, 64)
		t, terr := strconv.ParseUint(strings.TrimSpace(total), 10, 64)
		if !found || derr != nil || terr != nil {
			bad("sync_completed", fmt.Errorf("%q is not \"done / total\"", sc))
		} else {
			a.SyncDone, a.SyncTotal = d, t
		}
	}
	return a
}
