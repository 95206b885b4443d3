package plan

import (
	"strings"
	"testing"
)

// The remedy of pve.discard_on_remove is an option pve-storage has: the
// captured Proxmox storage on VDO without saferemove, judged with the
// pve-storage versions on either side of 9.0.14 (blkdiscard --zeroout) and
// with none read (a snapshot without dpkg-query).
func TestPVEDiscardOnRemoveByVersion(t *testing.T) {
	for _, c := range []struct{ version, says string }{
		{"9.1.7", "pve-storage 9.1.7 zeroes a removed disk (blkdiscard --zeroout"},
		{"9.0.14", "pve-storage 9.0.14 zeroes a removed disk (blkdiscard --zeroout"},
		{"8.3.6", "pve-storage 8.3.6 zeroes a removed disk with cstream, at most 10 MB/s"},
		{"", "VDO keeps their blocks"},
	} {
		h := replayHost(t, "pve")
		h.PVEStorageVersion = c.version
		var got *Finding
		r := Plan(loadDesired(t, "vdo-thick", h), h)
		for i, f := range r.Findings {
			if f.ID == PVEDiscardOnRemove {
				got = &r.Findings[i]
			}
		}
		if got == nil {
			t.Fatalf("version %q: no %s in %v", c.version, PVEDiscardOnRemove, keys(r.Findings))
		}
		if got.Remedy != "pvesm set vdostore --saferemove 1" || got.Expected != "saferemove 1" {
			t.Errorf("version %q: expected %q, remedy %q", c.version, got.Expected, got.Remedy)
		}
		if !strings.Contains(got.Message, c.says) || (c.version == "" && strings.Contains(got.Message, "pve-storage")) {
			t.Errorf("version %q: message %q lacks %q", c.version, got.Message, c.says)
		}
	}
}

// saferemove set: the storage wipes what it removes, nothing to report.
func TestPVESaferemoveSet(t *testing.T) {
	h := replayHost(t, "pve")
	for i := range h.Proxmox.Storages {
		h.Proxmox.Storages[i].Saferemove = true
	}
	for _, f := range Plan(loadDesired(t, "vdo-thick", h), h).Findings {
		if f.ID == PVEDiscardOnRemove {
			t.Errorf("saferemove 1 still raises %s: %s", f.Key(), f.Message)
		}
	}
}

func TestDebianVersion(t *testing.T) {
	for _, c := range []struct {
		in   string
		want debVersion
		ok   bool
	}{
		{"9.1.7", debVersion{9, 1, 7}, true},
		{"9.0.14", debVersion{9, 0, 14}, true},
		{"1:8.2.9~bpo1", debVersion{8, 2, 9}, true},
		{"9.1", debVersion{9, 1, 0}, true},
		{"", debVersion{}, false},
		{"unknown", debVersion{}, false},
	} {
		got, ok := debianVersion(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("debianVersion(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	if v, _ := debianVersion("9.0.13"); v.atLeast(9, 0, 14) {
		t.Error("9.0.13 counted as 9.0.14 or later")
	}
	if v, _ := debianVersion("10.0.1"); !v.atLeast(9, 0, 14) {
		t.Error("10.0.1 counted as before 9.0.14")
	}
}
