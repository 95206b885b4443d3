package removal

import (
	"errors"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/model"
)

// node-guard.txtar holds, in tvg, a Proxmox VE 9 volume chain made as
// pve-storage's LVMPlugin makes one (e2e/wipe/guard.sh): the current
// volume vm-105-disk-0.qcow2 and its snapshot s1,
// snap_vm-105-disk-0_s1.qcow2, behind the storage.cfg entry "lvm: chain"
// with snapshot-as-volume-chain 1.
const (
	chainHead = "vm-105-disk-0.qcow2"
	chainSnap = "snap_vm-105-disk-0_s1.qcow2"
)

// A chain is removed whole or not at all: a snapshot alone and the current
// volume alone are refused, each naming what it would leave and the way
// forward; both together are planned.
func TestChainWholeOrNotAtAll(t *testing.T) {
	o := recorded(t, "node-guard.txtar")
	for _, c := range []struct {
		absent []string
		want   []string // in the refusal; none: planned
	}{
		{[]string{chainSnap}, []string{"is snapshot s1 of the Proxmox VE volume chain of tvg/" + chainHead, "left: " + chainHead,
			"qm delsnapshot 105 s1", `declare the whole chain absent in vg tvg: ["` + chainHead + `", "` + chainSnap + `"]`}},
		{[]string{chainHead}, []string{"is the current volume of a Proxmox VE volume chain", "left behind: " + chainSnap,
			`["` + chainHead + `", "` + chainSnap + `"]`, "pvesm free chain:" + chainHead}},
		{[]string{chainHead, chainSnap}, nil},
	} {
		decl := Declared{"tvg": c.absent}
		var names []string
		for _, n := range c.absent {
			names = append(names, "tvg/"+n)
		}
		// The daemon plans each absent LV on its own (converge's
		// wipeAbsent): each is judged against the whole absent list.
		for _, name := range names {
			targets, err := Plan(o.Host, decl, Request{Names: []string{name}, RequireAbsent: true, Known: seen(decl)})
			if c.want == nil {
				if err != nil || len(targets) != 1 {
					t.Errorf("absent %q, %s: %v, %v; want it planned", c.absent, name, targets, err)
				}
				continue
			}
			if !errors.Is(err, ErrRefused) || targets != nil {
				t.Errorf("absent %q, %s: %v, %v; want refused", c.absent, name, targets, err)
				continue
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("absent %q, %s: %q lacks %q", c.absent, name, err, w)
				}
			}
		}
	}
	// keel wipe by hand: the names on the command line count as removed
	// along, without an absent entry.
	if targets, err := Plan(o.Host, Declared{"tvg": nil}, Request{Names: []string{"tvg/" + chainHead, "tvg/" + chainSnap}}); err != nil || len(targets) != 2 {
		t.Errorf("keel wipe of the whole chain: %v, %v", targets, err)
	}
	if _, err := Plan(o.Host, Declared{"tvg": nil}, Request{Names: []string{"tvg/" + chainSnap}}); !errors.Is(err, ErrRefused) {
		t.Errorf("keel wipe of the snapshot alone: %v", err)
	}
}

// A snapshot LV whose current volume is gone is no longer part of a chain
// anyone reads: it is planned like any LV. A snapshot name with "_" in it
// is split as pve-storage's parse_snap_name does, against the volumes that
// exist.
func TestChainOrphanAndUnderscore(t *testing.T) {
	h := snapshotHost(t, "../../apply/wipe/testdata/node-guard.txtar")
	head := h.LVs["tvg/"+chainHead]
	delete(h.LVs, "tvg/"+chainHead)
	decl := Declared{"tvg": {chainSnap}}
	if targets, err := Plan(h, decl, Request{Names: []string{"tvg/" + chainSnap}, RequireAbsent: true, Known: seen(decl)}); err != nil || len(targets) != 1 {
		t.Errorf("orphan snapshot: %v, %v", targets, err)
	}
	h.LVs["tvg/"+chainHead] = head
	snap := *h.LVs["tvg/"+chainSnap]
	snap.Name, snap.FullName = "snap_vm-105-disk-0_pre_upgrade.qcow2", "tvg/snap_vm-105-disk-0_pre_upgrade.qcow2"
	h.LVs[snap.FullName] = &snap
	c := ChainOf(h, "tvg", snap.Name, func(string) bool { return false })
	if c == nil || c.Volume != chainHead || c.Snapshot != "pre_upgrade" || strings.Join(c.Left, " ") != chainSnap+" "+chainHead {
		t.Fatalf("ChainOf(%s) = %+v", snap.Name, c)
	}
	if !strings.Contains(c.Remedy(), "qm delsnapshot 105 pre_upgrade") {
		t.Errorf("remedy %q", c.Remedy())
	}
}

// No capture has a guest configuration naming the chain (guard.sh's
// storage.cfg has none), so the reference is set on the captured model:
// while a VM names the current volume, its snapshot LV is refused even with
// the whole chain absent (the VM's disk reads through it), and a snapshot
// section names the snapshot LV by LVMPlugin's get_snap_name.
func TestChainSnapshotOfVolumeInUse(t *testing.T) {
	h := snapshotHost(t, "../../apply/wipe/testdata/node-guard.txtar")
	h.Guests = &model.Guests{Refs: []model.GuestRef{{File: "/etc/pve/qemu-server/105.conf", Line: 3, Kind: model.GuestQemu,
		Guest: "105", Key: "scsi0", Volume: "chain:" + chainHead}}}
	decl := Declared{"tvg": {chainHead, chainSnap}}
	_, err := Plan(h, decl, Request{Names: []string{"tvg/" + chainSnap}, RequireAbsent: true, Known: seen(decl)})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "snapshot s1 of the volume chain of tvg/"+chainHead) ||
		!strings.Contains(err.Error(), "105.conf") {
		t.Fatalf("got %v", err)
	}
	h.Guests.Refs[0].Section = "s1"
	if u := GuestUses(h, "tvg", chainSnap); len(u.Refs) != 1 {
		t.Errorf("snapshot section s1 of %s does not name %s: %+v", chainHead, chainSnap, u)
	}
	if u := GuestUses(h, "tvg", "snap_vm-105-disk-0.qcow2_s1"); len(u.Refs) != 0 {
		t.Errorf("LvmThinPlugin's name taken for a qcow2 volume: %+v", u)
	}
}
