// Package activation decides how keel brings a declared storage stack up at
// boot (keel activate) and generates the udev rules that let the kernel and
// lvm2 do most of it by themselves: one that makes lvm2 scan keel's own LVs
// as PVs, and one that sets each declared bcache device's tunables when the
// kernel registers it. Everything here is pure: it reads a desired state and
// an observed probes.Host and returns steps, messages and file contents.
package activation

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/probes/shell"
	"github.com/keel-storage/keel/schema/spec"
)

// Layer is one declared VG and its place in the stacking graph.
type Layer struct {
	VG string
	// Depth is 0 for a VG on disks, 1 + the deepest lower VG otherwise.
	Depth int
	// Lowers are the "vg/lv" of the declared LVs the VG uses as PVs.
	Lowers []string
}

// lvPath splits a declared PV path that names an LV of a declared VG
// ("/dev/vg/lv" or "/dev/mapper/vg-lv") into "vg/lv".
func lvPath(cfg *spec.Config, path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/dev/")
	if !ok {
		return "", false
	}
	if m, ok := strings.CutPrefix(rest, "mapper/"); ok {
		for vg := range cfg.VolumeGroups {
			if lv, ok := strings.CutPrefix(m, lvm.DMPrefix(vg)); ok && lv != "" && !strings.Contains(strings.ReplaceAll(lv, "--", ""), "-") {
				return vg + "/" + strings.ReplaceAll(lv, "--", "-"), true
			}
		}
		return "", false
	}
	vg, lv, ok := strings.Cut(rest, "/")
	if !ok || strings.Contains(lv, "/") || vg == "disk" {
		return "", false
	}
	if _, declared := cfg.VolumeGroups[vg]; !declared {
		return "", false
	}
	return vg + "/" + lv, true
}

// Order returns the declared VGs bottom-up: every VG after each declared VG
// holding an LV it uses as a PV; VGs of the same depth by name. A cycle is
// an error naming the VGs in it (the schema should already refuse one).
func Order(cfg *spec.Config) ([]Layer, error) {
	lowers := map[string][]string{}
	for name, vg := range cfg.VolumeGroups {
		for _, pv := range vg.PVs {
			if lv, ok := lvPath(cfg, pv); ok {
				lowers[name] = append(lowers[name], lv)
			}
		}
		slices.Sort(lowers[name])
	}
	depth := map[string]int{}
	visiting := map[string]bool{}
	var visit func(string, []string) (int, error)
	visit = func(vg string, path []string) (int, error) {
		if d, ok := depth[vg]; ok {
			return d, nil
		}
		if visiting[vg] {
			return 0, fmt.Errorf("vg %s: stacking cycle %s", vg, strings.Join(append(path, vg), " -> "))
		}
		visiting[vg] = true
		d := 0
		for _, lv := range lowers[vg] {
			ld, err := visit(lvm.Split(lv).VG, append(path, vg))
			if err != nil {
				return 0, err
			}
			d = max(d, ld+1)
		}
		visiting[vg] = false
		depth[vg] = d
		return d, nil
	}
	var out []Layer
	for name := range cfg.VolumeGroups {
		d, err := visit(name, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, Layer{VG: name, Depth: d, Lowers: lowers[name]})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Depth != out[j].Depth {
			return out[i].Depth < out[j].Depth
		}
		return out[i].VG < out[j].VG
	})
	return out, nil
}

// Status is where a VG stands in the activation.
type Status int

const (
	// Active: the VG is complete and every LV lvm2 would autoactivate is active.
	Active Status = iota
	// Activate: every PV is present; the step's commands bring the VG up.
	Activate
	// Waiting: a PV is missing; Reason says which and why.
	Waiting
	// Absent: LVM knows no such VG and nothing it could be on is still to
	// come: every declared disk is present with a size (blank, or labelled
	// for no VG or another one) and every declared lower LV is present or does not
	// exist at all. Waiting cannot make such a VG appear, so it does not
	// hold the stack (and the guests that require it) back; keel.service
	// creates it when create is true. Reason says which.
	Absent
)

var statusNames = [...]string{"active", "activate", "waiting", "absent"}

// String returns the status in lower case.
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "unknown"
}

// Step is the state of one declared VG and what to run for it.
type Step struct {
	Layer
	Status Status
	// Commands are argv lists to run, in order, when Status is Activate.
	Commands [][]string
	// Reason explains a Waiting step, naming the missing PV and why
	// ("vdovg incomplete: PV /dev/vdolab/vdolv is not active because …").
	Reason string
}

// Plan is the activation state of the whole declared stack.
type Plan struct {
	Steps []Step
}

// Done reports whether every declared VG is active or Absent.
func (p Plan) Done() bool {
	for _, s := range p.Steps {
		if s.Status != Active && s.Status != Absent {
			return false
		}
	}
	return true
}

// AllActive reports whether every declared VG is active: Done with
// nothing Absent.
func (p Plan) AllActive() bool {
	for _, s := range p.Steps {
		if s.Status != Active {
			return false
		}
	}
	return true
}

// Runnable returns the Activate steps whose lower VGs are all active, in
// order: what to run now.
func (p Plan) Runnable() []Step {
	active := map[string]bool{}
	for _, s := range p.Steps {
		active[s.VG] = s.Status == Active
	}
	var out []Step
	for _, s := range p.Steps {
		if s.Status != Activate {
			continue
		}
		ok := true
		for _, lv := range s.Lowers {
			ok = ok && active[lvm.Split(lv).VG]
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}

// Absent returns the reasons of the Absent steps, bottom-up.
func (p Plan) Absent() []string {
	var out []string
	for _, s := range p.Steps {
		if s.Status == Absent {
			out = append(out, s.Reason)
		}
	}
	return out
}

// Blocked returns the reasons of every step that is neither active nor
// Absent, bottom-up.
func (p Plan) Blocked() []string {
	var out []string
	for _, s := range p.Steps {
		switch s.Status {
		case Waiting:
			out = append(out, s.Reason)
		case Activate:
			out = append(out, fmt.Sprintf("vg %s: not active yet (%s)", s.VG, shell.Lines(s.Commands)))
		}
	}
	return out
}

// index resolves declared PV paths to observed PVs.
type index struct {
	h      *model.Host
	byPath map[string]*model.PV
}

func newIndex(h *model.Host) index {
	ix := index{h: h, byPath: map[string]*model.PV{}}
	for name, pv := range h.PVs {
		ix.byPath[name] = pv
		if pv.Device != "" {
			ix.byPath["/dev/"+pv.Device] = pv
		}
		for _, id := range pv.ByID {
			ix.byPath["/dev/disk/by-id/"+strings.TrimPrefix(id, "/dev/disk/by-id/")] = pv
		}
	}
	for key, lv := range h.LVs {
		if lv.DMName == "" {
			continue
		}
		if pv, ok := h.PVs["/dev/mapper/"+lv.DMName]; ok {
			ix.byPath["/dev/"+key] = pv
		}
		if pv, ok := h.PVs["/dev/"+key]; ok {
			ix.byPath["/dev/mapper/"+lv.DMName] = pv
		}
	}
	return ix
}

// missingPV reports whether an observed PV is present and readable: LVM
// marks a missing PV with 'm' in pv_attr, and names it "[unknown]".
func missingPV(pv *model.PV) bool {
	return pv == nil || strings.HasPrefix(pv.Name, "[unknown") || (len(pv.Attr) >= 3 && pv.Attr[2] == 'm')
}

// Compute returns the activation state of the declared stack on the host:
// one step per declared VG, bottom-up. It never plans a create: a VG that
// does not exist is Waiting while a device it could be on is still to come
// (a disk or bcache device not there yet, a lower LV of a VG that waits)
// and Absent otherwise (keel apply creates, keel activate only activates).
//
// A declared disk that is present but carries no PV of the VG does not
// block: LVM reads the labels of every device it is allowed to (lvm2's
// label scan, lvm(8)), so waiting does not change what it finds, and a VG
// that lost a PV is partial in LVM's own report (vg_attr 'p', a PV named
// "[unknown]"), which blocks below.
func Compute(cfg *spec.Config, h *model.Host) (Plan, error) {
	layers, err := Order(cfg)
	if err != nil {
		return Plan{}, err
	}
	ix := newIndex(h)
	reasons := map[string]string{} // VG → why it is not active
	status := map[string]Status{}
	var plan Plan
	for _, l := range layers {
		st := Step{Layer: l}
		want := cfg.VolumeGroups[l.VG]
		vg := h.VGs[l.VG]
		var missing, gone, present []string
		var needScan []string
		for _, path := range want.PVs {
			pv := ix.byPath[path]
			if lv, ok := lvPath(cfg, path); ok {
				why, never := lvNotReady(h, lv, reasons, status)
				switch {
				case why != "" && never:
					gone = append(gone, fmt.Sprintf("PV %s: %s", path, why))
				case why != "":
					missing = append(missing, fmt.Sprintf("PV %s is not active because %s", path, why))
				case pv == nil || pv.VG != l.VG:
					// The LV is active but LVM has not read its label
					// yet: lvm2's udev rules skipped it (a PV on an LV).
					needScan = append(needScan, "/dev/"+lv)
				}
				continue
			}
			switch {
			case pv == nil && presentDevice(h, path):
				present = append(present, path+" (no PV label)")
			case pv != nil && !missingPV(pv) && pv.VG != l.VG:
				present = append(present, fmt.Sprintf("%s (a PV of %s)", path, pvVG(pv)))
			case missingPV(pv):
				missing = append(missing, fmt.Sprintf("PV %s is missing: %s", path, deviceWhy(cfg, h, path)))
			}
		}
		if vg != nil {
			// A lower LV that does not exist under a VG that does: LVM
			// reports the VG partial; name the LV too.
			missing = append(missing, gone...)
		}
		switch {
		case len(missing) > 0 && vg != nil:
			st.Status, st.Reason = Waiting, fmt.Sprintf("%s incomplete: %s", l.VG, strings.Join(missing, "; "))
		case len(missing) > 0:
			st.Status, st.Reason = Waiting, fmt.Sprintf("vg %s not found: %s", l.VG, strings.Join(missing, "; "))
		case vg == nil && len(needScan) == 0:
			st.Status, st.Reason = Absent, absentReason(l.VG, want.Create, append(present, gone...))
		case len(vg2partial(vg)) > 0:
			st.Status, st.Reason = Waiting, fmt.Sprintf("%s incomplete: %s", l.VG, strings.Join(vg2partial(vg), "; "))
		default:
			inactive := inactiveLVs(h, l.VG)
			if vg != nil && len(inactive) == 0 && len(needScan) == 0 {
				st.Status = Active
				break
			}
			st.Status = Activate
			for _, dev := range needScan {
				st.Commands = append(st.Commands, []string{"pvscan", "--cache", dev})
			}
			// -aay: what lvm2's own autoactivation would have done, so
			// what it leaves inactive (autoactivated) stays inactive
			// here too.
			st.Commands = append(st.Commands, []string{"vgchange", "-aay", l.VG})
			if len(inactive) > 0 {
				st.Reason = fmt.Sprintf("vg %s: inactive LVs %s", l.VG, strings.Join(inactive, ", "))
			} else {
				st.Reason = fmt.Sprintf("vg %s: LVM has not scanned %s", l.VG, strings.Join(needScan, ", "))
			}
		}
		status[l.VG] = st.Status
		if st.Status != Active {
			reasons[l.VG] = st.Reason
		}
		plan.Steps = append(plan.Steps, st)
	}
	return plan, nil
}

// presentDevice reports whether path names a block device the probe saw
// with a size: an md array not yet assembled, a loop device without its
// file and a multipath map still being set up show in /sys/block with size
// 0 (or not at all) and may still bring a PV, so they count as missing.
func presentDevice(h *model.Host, path string) bool {
	k := h.Device(path)
	if k == "" {
		return false
	}
	if q := h.Queues[k]; q != nil && q.Size == 0 {
		return false
	}
	return true
}

func pvVG(pv *model.PV) string {
	if pv.VG == "" {
		return "no VG"
	}
	return "VG " + pv.VG
}

// absentReason says why an Absent VG does not hold the stack back and who
// creates it.
func absentReason(vg string, create bool, pvs []string) string {
	s := fmt.Sprintf("vg %s does not exist and nothing it could be on is still to come (%s)", vg, strings.Join(pvs, ", "))
	if create {
		return s + ": keel.service creates it (create: true)"
	}
	return s + ": keel does not create it (create: false); keel check reports it as vg.missing"
}

// vg2partial lists the PVs LVM itself reports missing in a VG it knows.
func vg2partial(vg *model.VG) []string {
	if vg == nil {
		return nil
	}
	var out []string
	for _, name := range vg.PVs {
		if strings.HasPrefix(name, "[unknown") {
			out = append(out, "a PV is missing (LVM names it "+name+")")
		}
	}
	if len(out) == 0 && vg.Partial() {
		out = append(out, "LVM reports the VG partial")
	}
	return out
}

// inactiveLVs lists the VG's LVs that lvm2's autoactivation would activate
// (autoactivated) and that are not active.
func inactiveLVs(h *model.Host, vg string) []string {
	var out []string
	vl := volumeList(h)
	for key, lv := range h.LVs {
		if lv.VG != vg || lv.Active || !autoactivated(h, lv, vl) {
			continue
		}
		out = append(out, key)
	}
	slices.Sort(out)
	return out
}

// autoactivated reports whether vgchange -aay (lvm2's autoactivation, the
// command keel runs and lvm2's udev rules run at boot) activates lv. The
// checks are lvm2's own, in its order: tools/vgchange.c vgchange_activate
// skips a VG with NOAUTOACTIVATE (vg_autoactivation off) before any LV;
// _activate_lvs_in_vg then skips hidden LVs, old-style snapshots (the
// origin's activation brings them), a vdo-pool LV (no device of its own:
// its _vdata is what is active), an LV with the activation-skip flag
// (lib/metadata/lv_manip.c lv_activation_skip: lv_attr's tenth character
// 'k'; lvm2 sets it on every thin snapshot by default, which is how
// Proxmox VE's snapshots are made, and `lvchange -ky` on its templates),
// an LV that activation/auto_activation_volume_list leaves out (lib/
// activate/activate.c lv_passes_auto_activation_filter), and one with
// LV_NOAUTOACTIVATE (lv_autoactivation off: `lvcreate
// --setautoactivation n`, Proxmox VE's guest disks). vl is volumeList(h).
func autoactivated(h *model.Host, lv *model.LV, vl *[]string) bool {
	vg := h.VGs[lv.VG]
	if vg != nil && vg.NoAutoactivation {
		return false
	}
	if lv.Hidden || lv.SegType == "vdo-pool" {
		return false
	}
	if len(lv.Attr) > 0 && (lv.Attr[0] == 's' || lv.Attr[0] == 'S') {
		return false
	}
	if len(lv.Attr) > 9 && lv.Attr[9] == 'k' {
		return false
	}
	if vl != nil && !passesVolumeList(*vl, lv, vg) {
		return false
	}
	// An LVM older than 2.03.12 reports no lv_autoactivation, and has no
	// such flag: such an LV is autoactivated.
	if aa, ok := lv.Fields.Lookup("lv_autoactivation"); ok && aa != "enabled" {
		return false
	}
	return true
}

// volumeList returns activation/auto_activation_volume_list as LVM reads
// it (lvmconfig), or nil when it is not set: then every LV passes.
func volumeList(h *model.Host) *[]string {
	raw, ok := h.LVMConfig.Values["activation/auto_activation_volume_list"]
	if !ok {
		return nil
	}
	l := lvm.ConfigList(raw)
	return &l
}

// passesVolumeList is lvm2's _lv_passes_volumes_filter (lib/activate/
// activate.c) for auto_activation_volume_list: an entry "vg" or "vg/lv"
// names the LV, "@tag" matches a tag of the LV or its VG, "@*" matches when
// a host tag is among them. keel does not know the host tags (lvm.conf's
// tags section, the host name with hosttags = 1), so "@*" counts as a match
// for an LV or VG with any tag: keel then waits for an LV lvm2 may leave
// inactive rather than leave one inactive that lvm2 would activate. An
// empty list ([]) passes nothing.
func passesVolumeList(list []string, lv *model.LV, vg *model.VG) bool {
	var vgTags []string
	if vg != nil {
		vgTags = vg.Tags
	}
	lvTags := strings.Split(lv.Fields.Get("lv_tags"), ",")
	for _, e := range list {
		switch {
		case e == "" || e == "@":
			// lvm2 ignores an empty string or tag.
		case e == "@*":
			if slices.ContainsFunc(lvTags, func(t string) bool { return t != "" }) || len(vgTags) > 0 {
				return true
			}
		case strings.HasPrefix(e, "@"):
			if slices.Contains(lvTags, e[1:]) || slices.Contains(vgTags, e[1:]) {
				return true
			}
		case e == lv.VG || e == lv.VG+"/"+lv.Name:
			return true
		}
	}
	return false
}

// lvNotReady says why a lower LV cannot serve as a PV yet, or "". never
// is true when waiting cannot change that: the LV does not exist in a VG
// LVM knows, or its VG is Absent.
func lvNotReady(h *model.Host, lv string, reasons map[string]string, status map[string]Status) (why string, never bool) {
	vg := lvm.Split(lv).VG
	o := h.LVs[lv]
	switch {
	case o == nil && status[vg] == Absent && reasons[vg] != "":
		return fmt.Sprintf("LV %s does not exist (%s)", lv, reasons[vg]), true
	case o == nil && h.VGs[vg] != nil:
		return fmt.Sprintf("LV %s does not exist", lv), true
	case o == nil && reasons[vg] != "":
		return reasons[vg], false
	case o == nil:
		return fmt.Sprintf("LV %s does not exist", lv), false
	case o.Active:
		return "", false
	case reasons[vg] != "":
		return reasons[vg], false
	default:
		return fmt.Sprintf("LV %s is inactive", lv), false
	}
}

// deviceWhy explains a missing disk PV: a declared bcache device that is
// not registered, a device that is not there or has size 0 (presentDevice),
// or one LVM itself marks missing.
func deviceWhy(cfg *spec.Config, h *model.Host, path string) string {
	name := strings.TrimPrefix(path, "/dev/")
	if b, ok := cfg.Bcache[name]; ok {
		return fmt.Sprintf("bcache device %s (backing %s) is not registered", name, b.Backing)
	}
	if strings.HasPrefix(name, "bcache") {
		return "no such bcache device is registered"
	}
	switch k := h.Device(path); {
	case k == "":
		return "no such device"
	case !presentDevice(h, path):
		return fmt.Sprintf("device %s has size 0 (not assembled or attached yet)", k)
	}
	return "LVM reports the PV missing"
}
