package probes

import (
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/model"
)

// The value syntax of Proxmox VE disk keys: the volume is the first item
// without "=", or file= (qemu-server) / volume= (pve-container).
func TestPVEDiskVolume(t *testing.T) {
	for _, c := range []struct{ v, kind, want string }{
		{"store:vm-105-disk-0", model.GuestQemu, "store:vm-105-disk-0"},
		{"store:vm-105-disk-0,discard=on,size=32G", model.GuestQemu, "store:vm-105-disk-0"},
		{"cache=none,file=store:vm-105-disk-1,size=8G", model.GuestQemu, "store:vm-105-disk-1"},
		{"none,media=cdrom", model.GuestQemu, "none"},
		{"/dev/guest-vg/raw,size=1G", model.GuestQemu, "/dev/guest-vg/raw"},
		{"store:vm-200-disk-1,mp=/srv,backup=1", model.GuestLXC, "store:vm-200-disk-1"},
		{"mp=/srv,volume=store:vm-200-disk-2", model.GuestLXC, "store:vm-200-disk-2"},
		{"mp=/srv,file=store:vm-200-disk-2", model.GuestLXC, ""}, // file= is qemu's key
		{"size=8G", model.GuestQemu, ""},
	} {
		if got := pveDiskVolume(c.v, c.kind); got != c.want {
			t.Errorf("pveDiskVolume(%q, %s) = %q, want %q", c.v, c.kind, got, c.want)
		}
	}
}

// Every section of a config counts (snapshots, pending changes), only disk
// keys are read, and each reference keeps its line.
func TestParsePVEConfigSections(t *testing.T) {
	conf := strings.Join([]string{
		"#web server", // 1: the description
		"ide2: none,media=cdrom",
		"net0: virtio=BC:24:11:00:00:01,bridge=vmbr0",
		"scsi0: store:vm-105-disk-2,size=16M",
		"hookscript: local:snippets/hook.pl",
		"efidisk0: store:vm-105-disk-3,efitype=4m",
		"",
		"[PENDING]", // 8
		"virtio1: store:vm-105-disk-4",
		"",
		"[snap1]", // 11
		"vmstate: store:vm-105-state-snap1",
		"unused3: store:vm-105-disk-5",
	}, "\n")
	refs, err := parsePVEConfig([]byte(conf), "/etc/pve/qemu-server/105.conf", model.GuestQemu, "105")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range refs {
		got = append(got, r.Where()+" "+r.What())
	}
	want := []string{
		"/etc/pve/qemu-server/105.conf:4 VM 105 scsi0 store:vm-105-disk-2",
		"/etc/pve/qemu-server/105.conf:6 VM 105 efidisk0 store:vm-105-disk-3",
		"/etc/pve/qemu-server/105.conf:9 VM 105 snapshot PENDING virtio1 store:vm-105-disk-4",
		"/etc/pve/qemu-server/105.conf:12 VM 105 snapshot snap1 vmstate store:vm-105-state-snap1",
		"/etc/pve/qemu-server/105.conf:13 VM 105 snapshot snap1 unused3 store:vm-105-disk-5",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("refs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A container: rootfs and mount points, not its raw lxc.* keys; a bind
	// mount of a host path is a path reference.
	ct := "rootfs: store:vm-200-disk-0,size=8G\nmp0: /dev/guest-vg/data,mp=/data\nlxc.cgroup2.devices.allow: c 10:200 rwm\n"
	refs, err = parsePVEConfig([]byte(ct), "/etc/pve/lxc/200.conf", model.GuestLXC, "200")
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 2 || refs[0].Volume != "store:vm-200-disk-0" || refs[1].Path != "/dev/guest-vg/data" || refs[1].Line != 2 {
		t.Errorf("container refs %+v", refs)
	}
}

// A libvirt domain's disks by <source dev>, <source file> on /dev, a
// volume of a pool and a backing store; an interface's <source dev> is not
// a disk.
func TestParseLibvirtDomain(t *testing.T) {
	x := `<domstatus state='running'>
  <domain type='kvm' id='3'>
    <name>db</name>
    <devices>
      <disk type='block' device='disk'>
        <source dev='/dev/vg0/db-data'/>
        <backingStore type='block'>
          <source dev='/dev/mapper/vg0-db--base'/>
        </backingStore>
        <target dev='vdb' bus='virtio'/>
      </disk>
      <disk type='file' device='disk'>
        <source file='/var/lib/libvirt/images/db.qcow2'/>
        <target dev='vda' bus='virtio'/>
      </disk>
      <disk type='volume' device='disk'>
        <source pool='lvpool' volume='db-logs'/>
        <target dev='vdc' bus='virtio'/>
      </disk>
      <interface type='direct'>
        <source dev='/dev/tap0' mode='bridge'/>
      </interface>
    </devices>
  </domain>
</domstatus>
`
	refs, err := parseLibvirtDomain([]byte(x), "/run/libvirt/qemu/db.xml", model.GuestLibvirt, "file-name")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range refs {
		got = append(got, r.Where()+" "+r.What()+" target "+r.Target)
	}
	want := []string{
		"/run/libvirt/qemu/db.xml:6 libvirt domain db source dev /dev/vg0/db-data target vdb",
		"/run/libvirt/qemu/db.xml:8 libvirt domain db source dev /dev/mapper/vg0-db--base target vdb",
		"/run/libvirt/qemu/db.xml:17 libvirt domain db source pool pool lvpool volume db-logs target vdc",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("refs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A file that is not XML is an error: what it names is unknown.
	if _, err := parseLibvirtDomain([]byte("<domain><devices><disk>"), "x.xml", model.GuestLibvirt, "x"); err == nil {
		t.Error("a truncated domain parsed without error")
	}
}
