package probes

import (
	"path"

	"github.com/keel-storage/keel/probes/hostio"
)

// Autoactivating lists, through fsys, the VGs lvm2's own event
// autoactivation is activating now: a process running
// `lvm vgchange -aay --autoactivation event VG`, the command udev's
// 69-dm-lvm.rules starts as the transient lvm-activate-<VG>.service for a
// VG whose PVs are all online (lvm2 2.03.14 and later; the guest's journal
// shows "[systemd-run] /usr/sbin/lvm vgchange -aay --autoactivation event
// vdovg"). While it runs it holds the VG's lock, so an LVM report of that
// VG waits for it. A VG may be listed twice; "" stands for an activation
// whose VG keel cannot tell (a vgchange of every VG).
func Autoactivating(fsys hostio.FS) ([]string, error) {
	procs, err := readProcesses(fsys, func(argv []string) bool {
		_, ok := autoactivatedVG(argv)
		return ok
	})
	if err != nil {
		return nil, err
	}
	var vgs []string
	for _, p := range procs {
		vg, _ := autoactivatedVG(p.Argv)
		vgs = append(vgs, vg)
	}
	return vgs, nil
}

// autoactivatedVG reports whether argv is lvm2's event autoactivation
// (vgchange, as its own program or as `lvm vgchange`, with -aay and
// --autoactivation event) and of which VG: its one positional argument,
// "" when it names none or several.
func autoactivatedVG(argv []string) (string, bool) {
	if len(argv) == 0 {
		return "", false
	}
	name, args := path.Base(argv[0]), argv[1:]
	if name == "lvm" && len(args) > 0 {
		name, args = args[0], args[1:]
	}
	if name != "vgchange" {
		return "", false
	}
	event := false
	var positional []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--autoactivation" && i+1 < len(args):
			event = args[i+1] == "event"
			i++
		case a == "--autoactivation=event":
			event = true
		case len(a) > 0 && a[0] == '-':
			// -aay, -a ay, --activate ay: the value of a split flag is
			// not a VG.
			if (a == "-a" || a == "--activate") && i+1 < len(args) {
				i++
			}
		default:
			positional = append(positional, a)
		}
	}
	if !event {
		return "", false
	}
	if len(positional) != 1 {
		return "", true
	}
	return positional[0], true
}
