package probes

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
)

// activationReportCmd is the LVM report keel activate reads while lvm2's
// own activation of the declared VGs still runs. It asks for the metadata
// fields the activation rules read and nothing of device-mapper:
//
//   - --readonly makes LVM grant its read locks without taking the VG's
//     flock (lvm2 lib/locking/locking.c lock_vol: "When --readonly is set,
//     grant read lock requests without trying to acquire an actual lock"),
//     so the report does not queue on /run/lock/lvm/V_<vg> behind lvm2's
//     vgchange, and it turns activation off, so LVM asks the kernel nothing
//     (lvm(8) --readonly). Which LVs are active is read afterwards from
//     device-mapper itself (ProbeActivation), not from this report: an LVM
//     command that scanned devices and then waited for the VG's lock while
//     the VG was activated can report LVs inactive that are active (lvm2
//     2.03.31 lib/device/dev-cache.c dm_devs_cache_update keeps a cache to
//     which the activation only appended devices; docs/boot.md).
//   - Activation does not write metadata (tools/vgchange.c activates from
//     the committed metadata), so a report read during it describes the
//     VGs as they are when it ends.
var activationReportCmd = hostio.Cmd{Name: "lvm", Args: []string{"fullreport", "--readonly", "--reportformat", "json",
	"--units", "b", "--nosuffix", "--all",
	"--configreport", "vg", "-o", "vg_name,vg_uuid,vg_attr,vg_tags,vg_autoactivation,pv_count,lv_count,vg_missing_pv_count",
	"--configreport", "pv", "-o", "pv_name,pv_uuid,pv_attr,vg_name",
	"--configreport", "lv", "-o", "lv_name,vg_name,lv_uuid,lv_attr,lv_role,lv_layout,lv_tags,lv_autoactivation,pool_lv,data_lv,metadata_lv,origin",
	"--configreport", "seg", "-o", "segtype,lv_uuid,lv_name,vg_name,seg_start_pe,seg_size_pe,devices",
	"--configreport", "pvseg", "-o", "pv_name,lv_uuid"}, ReadOnly: true}

// ActivationReportCmd is the command ReadActivationReport runs.
func ActivationReportCmd() hostio.Cmd { return activationReportCmd }

// ActivationReport is LVM's metadata of the VGs it could read when the
// report ran: PVs, VGs, LVs and segments, with no LV marked active; and
// LVM's configuration (lvmconfig), read beside it.
type ActivationReport struct {
	objs   *lvmObjects
	config *cmdOut
}

// LVs is the number of LVs, hidden ones included, in the report.
func (r *ActivationReport) LVs() int { return len(r.objs.LVs) }

// LVMConfigRead is LVM's configuration (lvmconfig) read in the
// background, once for the activation reports of one wait: lvm.conf does
// not change while lvm2 activates, and read during that activation it is
// one process fewer between lvm2's end and READY (ProbeActivation).
type LVMConfigRead struct {
	done chan struct{}
	out  cmdOut // set before done is closed
}

// StartLVMConfigRead starts reading LVM's configuration through src; it
// ends with ctx.
func StartLVMConfigRead(ctx context.Context, src hostio.Source) *LVMConfigRead {
	r := &LVMConfigRead{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		res, err := runResult(ctx, src, lvmConfigCmd)
		r.out = cmdOut{res, err}
	}()
	return r
}

// ReadActivationReport runs activationReportCmd through src and parses it,
// with LVM's configuration from config, which it starts itself when
// config is nil.
func ReadActivationReport(ctx context.Context, src hostio.Source, config *LVMConfigRead) (*ActivationReport, error) {
	if config == nil {
		config = StartLVMConfigRead(ctx, src)
	}
	out, err := run(ctx, src, activationReportCmd)
	if err != nil {
		return nil, err
	}
	objs, err := parseFullReport(out)
	if err != nil {
		return nil, err
	}
	select {
	case <-config.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("lvmconfig: %w", ctx.Err())
	}
	return &ActivationReport{objs: objs, config: &config.out}, nil
}

// ProbeActivation builds the part of the observed model that the
// activation rules (reconcile/activation.Compute) read, for keel activate
// to tell at boot that the declared stack is up without a whole probe
// pass: the PVs, VGs and LVs of r (read earlier, during lvm2's
// activation); each LV active when device-mapper holds a device of its
// name with a live table now (`dmsetup table`, served by the ioctls where
// the runner can); each PV resolved to its kernel device and by-id names;
// LVM's configuration (lvmconfig, as r read it). Nothing else is read.
// What it lacks can only make the stack look less complete: a PV it
// cannot resolve reads as missing, an LV without a device as inactive,
// and with no auto_activation_volume_list read every LV counts as
// autoactivated.
//
// ProbeActivation takes over r's objects; r is not to be used again.
func ProbeActivation(ctx context.Context, src hostio.Source, r *ActivationReport) (*model.Host, error) {
	h := &model.Host{PVs: r.objs.PVs, VGs: r.objs.VGs, LVs: r.objs.LVs, Queues: map[string]*model.Queue{},
		ByID: map[string][]string{}, DM: map[string]*model.DMDevice{}}
	var table, config cmdOut
	var wg sync.WaitGroup
	if r.config != nil {
		config = *r.config
	} else {
		wg.Go(func() {
			res, err := runResult(ctx, src, lvmConfigCmd)
			config = cmdOut{res, err}
		})
	}
	wg.Go(func() {
		res, err := runResult(ctx, src, dmTableCmd)
		table = cmdOut{res, err}
	})
	// dm-name-… and dm-uuid-… name device-mapper devices, which the
	// activation rules find by /dev/mapper name; at thousands of LVs they
	// are most of the directory.
	byID, _ := readLinks(src.FS, devDiskByID, func(name string) bool { return strings.HasPrefix(name, "dm-") })
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return h, fmt.Errorf("probe: %w", err)
	}
	if table.err != nil {
		return h, fmt.Errorf("probe: %w", table.err)
	}
	tables, err := parseDMLines("dmsetup table", table.res.Stdout)
	if err != nil {
		return h, fmt.Errorf("probe: %w", err)
	}
	for name, t := range tables {
		h.DM[name] = &model.DMDevice{Name: name, Table: t}
	}
	for _, lv := range h.LVs {
		lv.Active = len(tables[lv.DMName]) > 0
	}
	if config.err == nil {
		if v, err := parseLVMConfig(config.res.Stdout); err == nil {
			h.LVMConfig.Values = v
		}
	}
	for k, ids := range byID {
		h.ByID[k] = slices.Sorted(slices.Values(ids))
	}
	for _, pv := range h.PVs {
		resolvePV(src.FS, pv, byID)
	}
	return h, nil
}
