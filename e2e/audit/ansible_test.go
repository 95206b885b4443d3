//go:build e2e

package audit

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// TestAnsibleRollout runs ansible.sh in one boot of the systemd guest:
// Debian's ansible-core runs the shipped playbook and role with a local
// connection, in check mode over two inventory hosts that are both the
// guest (typo-host's layer has a typo that keel vet refuses, naming the
// field; for the other the plan, the lvm.conf diff and the compliance
// summary are printed and nothing changes), then for real in audit mode
// (the .deb and the layered drop-ins installed, the host unchanged), then
// with keel_mode=converge (keel.service converges the host).
//
// The systemd guest carries ansible-core, python3-apt and apt
// (e2e/image/build.sh). The test runs only with KEEL_E2E_ANSIBLE=1 (make
// e2e-ansible): under TCG every task that runs a module on the host costs
// a Python start that compiles Ansible's module code from its zip, and the
// three ansible-playbook runs take several times the few minutes of guest
// time CI's hour has left (docs/testing.md has the figures).
func TestAnsibleRollout(t *testing.T) {
	if os.Getenv("KEEL_E2E_ANSIBLE") != "1" {
		t.Skip("opt-in for time: KEEL_E2E_ANSIBLE=1 runs it (make e2e-ansible)")
	}
	files := guest.ShareFiles(t, "ansible.sh", "../wipe/wipelib.sh", "../scenarios/stacks.sh")
	files["keel.deb"] = guest.Deb(t)
	root := filepath.Join(guest.RepoRoot(t), "packaging", "integrations", "ansible")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		files["ansible/"+filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	r := guest.Run(t, guest.Spec{
		Flavour: guest.Systemd,
		Disks:   []guest.Disk{{Kind: guest.HDD, Size: "256M", Serial: "hdd1"}},
		Files:   files,
		Script:  string(files["ansible.sh"]),
		Timeout: 35 * time.Minute,
	})
	r.LogVerdicts(t, "time: ")
	r.RequireLines(t,
		"ok: check mode, a typo in typo-host's host_vars: it fails at keel vet naming the field",
		"ok: check mode on a fresh host: the play passes for it",
		"ok: check mode shows the lvm.conf diff (scan_lvs = 1)",
		"ok: check mode shows keel plan's action on ansvg/tpool",
		"ok: check mode prints the compliance summary of the host",
		"ok: check mode changed nothing (keel not installed, lvm.conf, ansvg)",
		"ok: audit run: the play passes",
		"ok: audit run installed the .deb",
		"ok: audit run wrote the layers: 00-base.cue 01-textfile.cue 10-group.cue 50-host.cue agent.cue ",
		"ok: audit run: /etc/keel is 0755, its drop-ins 0644",
		"ok: audit run: keel.service is running",
		"ok: audit run prints the compliance summary of the host",
		"ok: audit run changed nothing on the host (lvm.conf, ansvg)",
		"ok: converge run: the play passes",
		"ok: after the converge run keel.service converged the host: keel check exits 0",
		"ok: lvm.conf has scan_lvs = 1",
	)
}
