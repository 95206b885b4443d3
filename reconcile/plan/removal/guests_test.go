package removal

import (
	"errors"
	"strings"
	"testing"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/probes/model"
)

// node-guestref.txtar was recorded by e2e/ownership/guestref.sh after its setup:
// guest-vg with vm-105-disk-0 (unused0 of VM 105, whose config is in
// /etc/pve/nodes/othernode/qemu-server/105.conf, line 7), vm-105-disk-1
// (scsi0 of that VM's snapshot section [before-upgrade], line 13),
// kvm-web-disk (the libvirt domain web's disk vda by its /dev/mapper path,
// /etc/libvirt/qemu/web.xml line 7) and vm-107-disk-0, named by nothing;
// storage.cfg defines the lvm storage "store" on guest-vg.
var guestDecl = Declared{"guest-vg": {"vm-105-disk-0", "vm-105-disk-1", "kvm-web-disk", "vm-107-disk-0"}}

func guestHost(t *testing.T) *model.Host {
	t.Helper()
	h := snapshotHost(t, "../../apply/wipe/testdata/node-guestref.txtar")
	if h.Guests == nil || len(h.Guests.Errors) > 0 || len(h.Guests.Unknown) > 0 {
		t.Fatalf("captured guests: %+v", h.Guests)
	}
	return h
}

// Every referenced absent LV is refused with its file and line and the
// command that takes the disk out of its guest; the LV nothing names is
// planned.
func TestPlanRefusesReferencedLVs(t *testing.T) {
	h := guestHost(t)
	_, err := Plan(h, guestDecl, Request{Names: AbsentNames(guestDecl)})
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("got %v, want a refusal", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"lv guest-vg/vm-105-disk-0: refused: a guest's configuration names it: /etc/pve/nodes/othernode/qemu-server/105.conf:7 (VM 105 unused0 store:vm-105-disk-0); keel never removes a disk a guest names: on node othernode: qm disk unlink 105 --idlist unused0; or keep it: drop vm-105-disk-0 from the absent list of vg guest-vg",
		"/etc/pve/nodes/othernode/qemu-server/105.conf:13 (VM 105 snapshot before-upgrade scsi0 store:vm-105-disk-1)",
		"on node othernode: qm delsnapshot 105 before-upgrade",
		"/etc/libvirt/qemu/web.xml:7 (libvirt domain web source dev /dev/mapper/guest--vg-kvm--web--disk)",
		"virsh detach-disk web vda --persistent",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "vm-107-disk-0") {
		t.Errorf("vm-107-disk-0 refused:\n%s", msg)
	}
	targets, err := Plan(h, guestDecl, Request{Names: []string{"guest-vg/vm-107-disk-0"}})
	if err != nil || len(targets) != 1 || targets[0].Name() != "guest-vg/vm-107-disk-0" {
		t.Fatalf("vm-107-disk-0: targets %+v err %v", targets, err)
	}
}

// A referenced LV that keel already renamed (an interrupted wipe) is not
// resumed: the config still names the original name.
func TestPlanRefusesReferencedResume(t *testing.T) {
	h := guestHost(t)
	lv := *h.LVs["guest-vg/vm-105-disk-0"]
	delete(h.LVs, "guest-vg/vm-105-disk-0")
	lv.Name = DelPrefix + "vm-105-disk-0"
	lv.FullName = "guest-vg/" + lv.Name
	lv.DMName = lvm.Name{VG: "guest-vg", LV: lv.Name}.DMName()
	lv.Fields = model.FieldsOf(map[string]string{"lv_tags": Tag})
	h.LVs[lv.FullName] = &lv
	_, err := Plan(h, guestDecl, Request{})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "resume guest-vg/del-vm-105-disk-0: refused: a guest's configuration names it: /etc/pve/nodes/othernode/qemu-server/105.conf:7") {
		t.Fatalf("got %v", err)
	}
}

// A guest config that exists but cannot be read may name any LV.
func TestPlanRefusesWhileGuestConfigUnreadable(t *testing.T) {
	h := guestHost(t)
	h.Guests.Errors = []string{"/etc/pve/nodes/othernode/qemu-server/110.conf: permission denied"}
	_, err := Plan(h, guestDecl, Request{Names: []string{"guest-vg/vm-107-disk-0"}})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "unreadable: /etc/pve/nodes/othernode/qemu-server/110.conf: permission denied") ||
		!strings.Contains(err.Error(), "make the unreadable guest configurations readable") {
		t.Fatalf("got %v", err)
	}
	// What an older snapshot did not record is not an unreadable config.
	h.Guests.Errors = nil
	h.Guests.Unknown = []string{"/etc/pve/nodes"}
	if u := GuestUses(h, "guest-vg", "vm-107-disk-0"); u.Any() {
		t.Errorf("unknown counted as a use: %+v", u)
	}
}

// A volume ID names an LV through its storage: in the storage's VG when it
// is lvm or lvmthin, in no VG when it is another type, in any VG when
// storage.cfg does not define it or cannot be read.
func TestGuestUsesStorageResolution(t *testing.T) {
	h := guestHost(t)
	named := func() bool { return GuestUses(h, "guest-vg", "vm-105-disk-0").Any() }
	if !named() {
		t.Fatal("captured: vm-105-disk-0 not named")
	}
	store := func() *model.PVEStorage {
		for i := range h.Proxmox.Storages {
			if h.Proxmox.Storages[i].ID == "store" {
				return &h.Proxmox.Storages[i]
			}
		}
		t.Fatal("no storage store in the capture")
		return nil
	}
	s := store()
	s.VG = "othervg"
	if named() {
		t.Error("a storage on another VG names guest-vg's LV")
	}
	s.VG, s.Type = "guest-vg", "zfspool"
	if named() {
		t.Error("a zfspool volume names an LV")
	}
	s.Type, s.VG = "lvmthin", ""
	if !named() {
		t.Error("an lvmthin storage without vgname: want any VG")
	}
	s.ID = "renamed"
	if !named() {
		t.Error("a storage storage.cfg does not define: want any VG")
	}
	h.Proxmox = nil
	if !named() {
		t.Error("no storage.cfg: want any VG")
	}
	// A thin storage's snapshot LV goes with the snapshot section that
	// names the disk (LvmThinPlugin's snap_<volname>_<snap>).
	if !GuestUses(h, "guest-vg", "snap_vm-105-disk-1_before-upgrade").Any() {
		t.Error("the thin snapshot LV of [before-upgrade] is not named")
	}
	if GuestUses(h, "guest-vg", "snap_vm-105-disk-0_before-upgrade").Any() {
		t.Error("a snapshot LV of a disk the section does not name is named")
	}
}

// Each way a path can name an LV, on the captured host (kvm-web-disk is
// active there).
func TestGuestUsesPaths(t *testing.T) {
	h := guestHost(t)
	lv := h.LVs["guest-vg/kvm-web-disk"]
	vg := h.VGs["guest-vg"]
	if lv == nil || vg == nil || !lv.Active {
		t.Fatalf("captured kvm-web-disk %+v", lv)
	}
	var dmN string
	for k, q := range h.Queues {
		if q.DMName == lv.DMName {
			dmN = k
		}
	}
	if dmN == "" {
		t.Fatalf("no sysfs device for %s", lv.DMName)
	}
	strip := func(u string) string { return strings.ReplaceAll(u, "-", "") }
	for _, c := range []struct {
		path string
		want bool
	}{
		{"/dev/guest-vg/kvm-web-disk", true},
		{"/dev/guest-vg/../guest-vg/kvm-web-disk", true},
		{"/dev/mapper/guest--vg-kvm--web--disk", true},
		{"/dev/disk/by-id/dm-name-guest--vg-kvm--web--disk", true},
		{"/dev/disk/by-id/dm-uuid-LVM-" + strip(vg.UUID) + strip(lv.UUID), true},
		{"/dev/" + dmN, true},
		{"/dev/mapper/guest-vg-kvm-web-disk", false}, // dashes not doubled: another dm name
		{"/dev/guest-vg/kvm-web-disk2", false},
		{"/dev/othervg/kvm-web-disk", false},
		{"/dev/disk/by-id/dm-uuid-LVM-" + strip(vg.UUID) + strings.Repeat("0", 32), false},
	} {
		h.Guests = &model.Guests{Refs: []model.GuestRef{{File: "/etc/libvirt/qemu/t.xml", Line: 1, Kind: model.GuestLibvirt, Guest: "t", Key: "source dev", Path: c.path}}}
		if got := GuestUses(h, "guest-vg", "kvm-web-disk").Any(); got != c.want {
			t.Errorf("%s: named %v, want %v", c.path, got, c.want)
		}
	}
	// A libvirt pool volume may be in any VG.
	h.Guests = &model.Guests{Refs: []model.GuestRef{{File: "/etc/libvirt/qemu/t.xml", Line: 1, Kind: model.GuestLibvirt, Guest: "t", Key: "source pool", Pool: "lv", PoolVolume: "kvm-web-disk"}}}
	if !GuestUses(h, "guest-vg", "kvm-web-disk").Any() {
		t.Error("a pool volume of the LV's name is not a use")
	}
}

// The command printed for each kind of reference.
func TestDetachCommands(t *testing.T) {
	node := "/etc/pve/nodes/pve2/"
	for _, c := range []struct {
		r    model.GuestRef
		want string
	}{
		{model.GuestRef{File: node + "qemu-server/105.conf", Kind: model.GuestQemu, Guest: "105", Key: "unused0"}, "on node pve2: qm disk unlink 105 --idlist unused0"},
		{model.GuestRef{File: "/etc/pve/qemu-server/105.conf", Kind: model.GuestQemu, Guest: "105", Key: "scsi1"}, "qm disk unlink 105 --idlist scsi1 --force 1"},
		{model.GuestRef{File: node + "qemu-server/105.conf", Kind: model.GuestQemu, Guest: "105", Key: "virtio1", Section: "PENDING"}, "on node pve2: qm set 105 --revert virtio1"},
		{model.GuestRef{File: node + "lxc/200.conf", Kind: model.GuestLXC, Guest: "200", Key: "mp0"}, "on node pve2: pct set 200 --delete mp0"},
		{model.GuestRef{File: node + "lxc/200.conf", Kind: model.GuestLXC, Guest: "200", Key: "rootfs", Section: "pre"}, "on node pve2: pct delsnapshot 200 pre"},
		{model.GuestRef{File: "/run/libvirt/qemu/db.xml", Kind: model.GuestLibvirt, Guest: "db", Key: "source pool"}, "virsh edit db and remove the disk"},
	} {
		if got := detach(c.r); got != c.want {
			t.Errorf("%+v: %q, want %q", c.r, got, c.want)
		}
	}
}
