package removal

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/keel-storage/keel/reconcile/state"
)

// node-foreign.txtar and node-uuid.txtar were recorded by e2e/ownership/foreignvg.sh
// (TestForeignVG) in the test guest, two 1G disks with serials vgida (sda)
// and vgidb (sdb): vmdata made on vgidb while the desired state declares it
// on vgida, then vmdata made again on vgida after keel had recorded its
// first vg_uuid (state-uuid.json). Each holds vmdata/vm-101-disk-0 with
// data, declared absent by e2e/ownership/foreignvg.cue.
const (
	diskA = "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_vgida"
	diskB = "/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_vgidb"
)

func TestMatchPVsAliases(t *testing.T) {
	h := snapshotHost(t, "../../apply/wipe/testdata/node-foreign.txtar")
	for _, tc := range []struct {
		pvs                []string
		foreign, drift     bool
		matched, extra, ms []string
	}{
		{pvs: []string{diskA}, foreign: true, extra: []string{"/dev/sdb"}, ms: []string{diskA}},
		// The same disk by its by-id link, its by-path link, its kernel name.
		{pvs: []string{diskB}, matched: []string{"/dev/sdb"}},
		{pvs: []string{"/dev/disk/by-path/pci-0000:00:03.0-scsi-0:0:1:0"}, matched: []string{"/dev/sdb"}},
		{pvs: []string{"/dev/sdb"}, matched: []string{"/dev/sdb"}},
		// The other disk's by-path link is not it.
		{pvs: []string{"/dev/disk/by-path/pci-0000:00:03.0-scsi-0:0:0:0"}, foreign: true, extra: []string{"/dev/sdb"},
			ms: []string{"/dev/disk/by-path/pci-0000:00:03.0-scsi-0:0:0:0"}},
		// Declared on both disks, the VG on one of them: drift, not foreign.
		{pvs: []string{diskA, diskB}, drift: true, matched: []string{"/dev/sdb"}, ms: []string{diskA}},
	} {
		m := MatchPVs(h, "vmdata", tc.pvs)
		if m.Foreign() != tc.foreign || m.Drift() != tc.drift || !slices.Equal(m.Matched, tc.matched) ||
			!slices.Equal(m.Extra, tc.extra) || !slices.Equal(m.Missing, tc.ms) {
			t.Errorf("pvs %q: %+v foreign %v drift %v; want matched %q extra %q missing %q foreign %v drift %v",
				tc.pvs, m, m.Foreign(), m.Drift(), tc.matched, tc.extra, tc.ms, tc.foreign, tc.drift)
		}
	}
}

func TestRemovalRefusedInForeignVG(t *testing.T) {
	h := snapshotHost(t, "../../apply/wipe/testdata/node-foreign.txtar")
	decl := Declared{"vmdata": {"vm-101-disk-0"}}
	uuid := h.VGs["vmdata"].UUID
	for _, absent := range []bool{true, false} {
		req := Request{Names: []string{"vmdata/vm-101-disk-0"}, RequireAbsent: absent,
			PVs: map[string][]string{"vmdata": {diskA}}}
		targets, err := Plan(h, decl, req)
		hold := VGIdentity(h, "vmdata", []string{diskA}, state.VG{}, false)
		if hold == nil || hold.Kind != HoldForeign {
			t.Fatalf("hold %+v, want foreign", hold)
		}
		if len(targets) != 0 || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), hold.Why) ||
			!strings.Contains(err.Error(), "vgrename "+uuid+" vmdata-other") {
			t.Errorf("absent %v: targets %v, err %v; want refused with %q", absent, targets, err, hold.Why)
		}
	}
	// Declared on the disk it is on, the same removal is planned.
	targets, err := Plan(h, decl, Request{Names: []string{"vmdata/vm-101-disk-0"}, RequireAbsent: true,
		PVs: map[string][]string{"vmdata": {diskB}}, Known: seen(decl)})
	if err != nil || len(targets) != 1 {
		t.Errorf("on its declared disk: targets %v, err %v; want the removal", targets, err)
	}
}

func TestRemovalRefusedUnderAnotherUUID(t *testing.T) {
	h := snapshotHost(t, "../../apply/wipe/testdata/node-uuid.txtar")
	st := recordedState(t)
	rec, known := st.VGs["vmdata"]
	now := h.VGs["vmdata"].UUID
	if !known || rec.UUID == now {
		t.Fatalf("state-uuid.json records %+v, the host has %s: want another UUID", rec, now)
	}
	req := Request{Names: []string{"vmdata/vm-101-disk-0"}, RequireAbsent: true,
		PVs: map[string][]string{"vmdata": {diskA}}, VGs: st.VGs, Known: seen(Declared{"vmdata": {"vm-101-disk-0"}})}
	targets, err := Plan(h, Declared{"vmdata": {"vm-101-disk-0"}}, req)
	if len(targets) != 0 || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "(vg.uuid_changed)") ||
		!strings.Contains(err.Error(), "keel ack-vg vmdata "+now) {
		t.Errorf("targets %v, err %v; want refused with keel ack-vg vmdata %s", targets, err, now)
	}
	// Acknowledged, it is the declared VG again.
	st.AckVG("vmdata", now, rec.FirstSeen)
	req.VGs = st.VGs
	if targets, err := Plan(h, Declared{"vmdata": {"vm-101-disk-0"}}, req); err != nil || len(targets) != 1 {
		t.Errorf("acknowledged: targets %v, err %v; want the removal", targets, err)
	}
}

// recordedState reads state-uuid.json, keel's state file as keel check left
// it in the guest after its first sight of vmdata.
func recordedState(t *testing.T) *state.State {
	t.Helper()
	b, err := os.ReadFile("../../apply/wipe/testdata/state-uuid.json")
	if err != nil {
		t.Fatal(err)
	}
	st := state.New()
	if err := json.Unmarshal(b, st); err != nil {
		t.Fatal(err)
	}
	return st
}
