package main

import (
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/state"
	"github.com/keel-storage/keel/schema/spec"
)

// vgUUIDRE is LVM's printed UUID: 32 characters of [A-Za-z0-9] in groups of
// 6-4-4-4-4-4-6 (lvm2's id_write_format, lib/uuid/uuid.c).
var vgUUIDRE = regexp.MustCompile(`^[A-Za-z0-9]{6}(-[A-Za-z0-9]{4}){5}-[A-Za-z0-9]{6}$`)

// runAckVG implements `keel ack-vg VG UUID`: the operator has checked that
// the VG now under the declared name VG, with vg_uuid UUID, is the one the
// desired state means (vg.uuid_changed). keel records UUID as its identity
// and acts in it again. Exit 0: recorded; 2: bad arguments or the state
// file could not be written.
func runAckVG(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("ack-vg", "VG UUID",
		"Records UUID as the identity of the declared VG VG, after vg.uuid_changed: the VG under the",
		"name is another one than keel first saw, and keel changes nothing in it until acknowledged.",
		"Give the vg_uuid the finding prints (vgs -o vg_name,vg_uuid,pv_name shows it).",
		"Exit status: 0 recorded, 2 bad arguments or keel's state file could not be written.")
	if code, ok := parseArgs(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() != 2 {
		return usageError(fs, stderr, "want a VG name and its vg_uuid")
	}
	vg, uuid := fs.Arg(0), fs.Arg(1)
	if !lvm.ValidName(vg) {
		return usageError(fs, stderr, "%q is not a valid VG name", vg)
	}
	if !vgUUIDRE.MatchString(uuid) {
		return usageError(fs, stderr, "%q is not an LVM UUID (as vgs -o vg_uuid prints it)", uuid)
	}
	now := time.Now()
	if _, err := stateStore().Update(func(st *state.State) error {
		st.AckVG(vg, uuid, now)
		return nil
	}); err != nil {
		fmt.Fprintf(stderr, "keel ack-vg: vg %s: %v\n", vg, err)
		return exitError
	}
	fmt.Fprintf(stdout, "vg %s: vg_uuid %s acknowledged; keel acts in it again\n", vg, uuid)
	return exitOK
}

// seeVGs adds to mem keel's records of the declared VGs' vg_uuids, after
// recording the first sight of each one seen now (plan.VGSightings): keel
// check and keel plan record like every other mode that reads the desired
// state. A node snapshot is another host, whose records keel does not have.
// A state that cannot be written (a user without access to it) is still
// read.
func seeVGs(mem plan.Memory, cfg *spec.Config, h *model.Host, node string) plan.Memory {
	if node != "" {
		return mem
	}
	store := stateStore()
	seen, gone := plan.VGSightings(cfg, h)
	st, err := store.LoadSeeingVGs(seen, gone, time.Now())
	if err != nil {
		if st, err = store.Load(); err != nil {
			return mem
		}
	}
	mem.VGs = st.VGs
	return mem
}
