package executor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/plan"
)

// guard runs the safety checks of an action before anything is applied.
func (e *Executor) guard(ctx context.Context, a plan.Action) error {
	for _, argv := range a.Commands {
		if err := hostio.ValidateArgv(argv); err != nil {
			return err
		}
	}
	if a.Kind == plan.KindCommand {
		if err := e.checkBlank(ctx, a); err != nil {
			return err
		}
	}
	if strings.HasPrefix(a.ID, "dm.suspended:") && e.VGLockHeld != nil {
		// An LVM command that holds the VG suspended the device itself and
		// resumes it when it ends (reconcile.planSuspended).
		for _, argv := range a.Commands {
			if len(argv) != 3 || argv[0] != "dmsetup" || argv[1] != "resume" {
				continue
			}
			vg, ok := probes.VGOfDMName(argv[2])
			if !ok {
				continue
			}
			held, err := e.VGLockHeld(vg)
			if err != nil {
				return fmt.Errorf("resume of %s: lvm lock of vg %s: %w", argv[2], vg, err)
			}
			if held {
				return fmt.Errorf("resume of %s: an lvm command holds vg %s; it suspended the device and resumes it itself", argv[2], vg)
			}
		}
	}
	// Reached only in maintenance mode: gate skips maintenance actions
	// otherwise.
	if a.Class == plan.Maintenance {
		open, err := e.openUsers(ctx, a)
		if err != nil {
			return fmt.Errorf("maintenance on %s: cannot tell whether its LVs are open: %w", a.Object, err)
		}
		if len(open) > 0 {
			return fmt.Errorf("maintenance on %s needs the pool stopped, but %s is open", a.Object, strings.Join(open, ", "))
		}
	}
	return nil
}

// openUsers lists the open LVs that stop a maintenance action. When the
// action first deactivates VGs stacked on the pool (vgchange -an VG), the
// pool's own LV is open only because those VGs are active: then any open
// LV in those VGs counts. Otherwise the pool and its LVs count.
func (e *Executor) openUsers(ctx context.Context, a plan.Action) ([]string, error) {
	var stacked []string
	for _, argv := range a.Commands {
		if len(argv) == 3 && argv[0] == "vgchange" && isActivation(argv, "n") {
			stacked = append(stacked, argv[2])
		}
	}
	if len(stacked) == 0 {
		return e.openLVs(ctx, a.Object)
	}
	var open []string
	for _, vg := range stacked {
		o, err := e.openLVs(ctx, vg+"/*")
		if err != nil {
			return nil, err
		}
		open = append(open, o...)
	}
	return open, nil
}

// createDevices returns the device arguments of the pvcreate, vgcreate and
// vgextend commands of an action: those are the disks that must be blank
// (a vgextend's, like a vgcreate's, may be an orphan PV).
func createDevices(cmds [][]string) (pv, vg []string) {
	for _, argv := range cmds {
		if len(argv) == 0 {
			continue
		}
		switch path.Base(argv[0]) {
		case "pvcreate":
			for _, s := range argv[1:] {
				if strings.HasPrefix(s, "/dev/") {
					pv = append(pv, s)
				}
			}
		case "vgcreate", "vgextend":
			for _, s := range argv[1:] {
				if strings.HasPrefix(s, "/dev/") {
					vg = append(vg, s)
				}
			}
		}
	}
	return pv, vg
}

// checkBlank refuses a create whose devices carry a signature. A device
// given to vgcreate may be an orphan PV (pvcreate'd, in no VG); any other
// signature is refused.
func (e *Executor) checkBlank(ctx context.Context, a plan.Action) error {
	pvs, vgs := createDevices(a.Commands)
	seen := map[string]bool{}
	for _, dev := range pvs {
		seen[dev] = true
		sig, err := e.signature(ctx, dev)
		if err != nil {
			return err
		}
		if sig != "" {
			return fmt.Errorf("pv %s carries a %s signature; keel creates only on blank devices", dev, sig)
		}
	}
	for _, dev := range vgs {
		if seen[dev] {
			continue // pvcreate'd by this same action: checked above
		}
		sig, err := e.signature(ctx, dev)
		if err != nil {
			return err
		}
		switch sig {
		case "":
		case "LVM2_member":
			vg, err := e.pvVG(ctx, dev)
			if err != nil {
				return err
			}
			if vg != "" {
				return fmt.Errorf("pv %s already belongs to vg %s", dev, vg)
			}
		default:
			return fmt.Errorf("pv %s carries a %s signature; keel creates only on blank devices", dev, sig)
		}
	}
	return nil
}

// signature returns the first signature type blkid finds on dev in
// low-level probing mode ("" when there is none).
func (e *Executor) signature(ctx context.Context, dev string) (string, error) {
	c := hostio.Cmd{Name: "blkid", Args: []string{"-p", "-o", "export", dev}}
	r, err := e.Runner.Run(ctx, c)
	if err != nil {
		return "", fmt.Errorf("pv %s: signature check: %w", dev, err)
	}
	switch r.ExitCode {
	case 2: // nothing found
		return "", nil
	case 0:
	default:
		return "", fmt.Errorf("pv %s: signature check: %w", dev, r.Err(c))
	}
	return parseBlkidType(r.Stdout), nil
}

// parseBlkidType returns TYPE (or PTTYPE, for a partition table) from
// blkid's export format; "unknown" when blkid found something unnamed.
func parseBlkidType(out []byte) string {
	var pt string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		switch k {
		case "TYPE":
			return v
		case "PTTYPE":
			pt = "partition table " + v
		}
	}
	if pt != "" {
		return pt
	}
	return "unknown"
}

// pvVG returns the VG an existing PV belongs to ("" for an orphan).
func (e *Executor) pvVG(ctx context.Context, dev string) (string, error) {
	c := hostio.Cmd{Name: "pvs", Args: []string{"--noheadings", "-o", "vg_name", dev}}
	r, err := e.Runner.Run(ctx, c)
	if err != nil {
		return "", fmt.Errorf("pv %s: %w", dev, err)
	}
	if err := r.Err(c); err != nil {
		return "", fmt.Errorf("pv %s: %w", dev, err)
	}
	return strings.TrimSpace(string(r.Stdout)), nil
}

// openLVs lists the open LVs that use the pool object ("vg/pool"): the
// pool itself and every LV whose pool_lv is the pool; "vg/*" lists every
// open LV of the VG.
func (e *Executor) openLVs(ctx context.Context, object string) ([]string, error) {
	n := lvm.Split(object)
	vg, pool := n.VG, n.LV
	if vg == "" || pool == "" {
		return nil, fmt.Errorf("object %q is not vg/lv", object)
	}
	c := hostio.Cmd{Name: "lvs", Args: []string{"--reportformat", "json", "-o", "lv_name,pool_lv,lv_device_open", vg}}
	r, err := e.Runner.Run(ctx, c)
	if err != nil {
		return nil, err
	}
	if err := r.Err(c); err != nil {
		return nil, err
	}
	return parseOpen(r.Stdout, vg, pool)
}

func parseOpen(out []byte, vg, pool string) ([]string, error) {
	var rep struct {
		Report []struct {
			LV []struct {
				Name string `json:"lv_name"`
				Pool string `json:"pool_lv"`
				Open string `json:"lv_device_open"`
			} `json:"lv"`
		} `json:"report"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return nil, fmt.Errorf("lvs report for vg %s: %w", vg, err)
	}
	var open []string
	for _, r := range rep.Report {
		for _, lv := range r.LV {
			name := strings.Trim(lv.Name, "[]")
			uses := pool == "*" || name == pool || strings.Trim(lv.Pool, "[]") == pool
			if uses && lv.Open == "open" {
				open = append(open, vg+"/"+name)
			}
		}
	}
	return open, nil
}
