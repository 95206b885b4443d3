package plan

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/state"
)

// The captures of e2e/kill (testdata/snapshots/kill-*.txtar, each with the
// desired state of its iteration in testdata/desired): keel apply killed in
// the middle of a step, the host as the next keel finds it.

// TestPlanInterruptedPvmove: keel's pvmove of the split pool's journal back
// to the NVMe, killed with keel's process group. lvm2 left its mirror LV
// pvmove0 and nothing polls it; before vg.pvmove_interrupted keel saw the
// journal on no PV at all (its _vdata segment is on the mirror) and planned
// nothing for it. keel resumes it only with its record of starting it.
func TestPlanInterruptedPvmove(t *testing.T) {
	h := replayHost(t, "kill-pvmove")
	mv, src := capturedPvmove(t, h)
	rec := keelsMove(t, src[0])
	r := PlanWith(loadDesired(t, "kill-pvmove", h), h, Memory{FirstPass: true, Pvmoves: []state.Pvmove{rec}})
	f := findingByKey(t, r, "vg.pvmove_interrupted@"+mv.FullName)
	if !strings.Contains(f.Message, "kvg/vsplit_vdata") {
		t.Errorf("message does not name the moved LV: %s", f.Message)
	}
	// The resume is the command keel ran: on a move that ended meanwhile
	// it finds nothing to move, where `pvmove SOURCE` would move it all.
	if want := strings.Join(rec.Argv, " "); f.Remedy != want {
		t.Errorf("remedy %q, want %q", f.Remedy, want)
	}
	a := actionByID(t, r, "vg.pvmove_interrupted:"+mv.FullName)
	if !slices.EqualFunc(a.Commands, [][]string{rec.Argv}, slices.Equal) {
		t.Errorf("commands %q", a.Commands)
	}
	// A record from before the command line was kept: pvmove SOURCE.
	rec.Argv = nil
	r = PlanWith(loadDesired(t, "kill-pvmove", h), h, Memory{FirstPass: true, Pvmoves: []state.Pvmove{rec}})
	if a := actionByID(t, r, "vg.pvmove_interrupted:"+mv.FullName); !slices.EqualFunc(a.Commands, [][]string{{"pvmove", src[0]}}, slices.Equal) {
		t.Errorf("commands without a recorded argv %q", a.Commands)
	}
	// It runs before every other action of the pass but lvm.conf's.
	for _, x := range r.Actions {
		if x.ID == a.ID {
			break
		}
		if x.Kind != KindLVMConf {
			t.Errorf("%s planned before the resume", x.ID)
		}
	}
	for _, x := range r.Actions {
		if strings.HasPrefix(x.ID, "vdo.layout.journal_off_fast") {
			t.Errorf("a second pvmove planned while the first is in progress: %s", x.ID)
		}
	}
}

// capturedPvmove returns the pvmove LV of a capture and its one source, a
// slow PV.
func capturedPvmove(t *testing.T, h *model.Host) (*model.LV, []string) {
	t.Helper()
	var mv *model.LV
	for _, lv := range h.LVs {
		if lv.Attr != "" && lv.Attr[0] == 'p' {
			mv = lv
		}
	}
	if mv == nil {
		t.Fatal("the capture holds no pvmove LV")
	}
	src := pvmoveSources(mv)
	if len(src) != 1 || h.PVs[src[0]] == nil || h.PVs[src[0]].Fast() {
		t.Fatalf("pvmove sources %q: want the one slow PV the journal was moved back from", src)
	}
	return mv, src
}

// keelsMove is keel's record of the journal move from src, as the
// executor's hook makes it from the command keel ran (lvm.PvmoveArgs).
func keelsMove(t *testing.T, src string) state.Pvmove {
	t.Helper()
	argv := []string{"pvmove", "-n", "kvg/vsplit_vdata", src + ":1000-1032", "/dev/nvme0n1"}
	source, lv, ok := lvm.PvmoveArgs(argv, "kvg")
	if !ok || source != src || lv != "kvg/vsplit_vdata" {
		t.Fatalf("lvm.PvmoveArgs read %q, %q, %v from keel's journal move", source, lv, ok)
	}
	return state.Pvmove{VG: "kvg", Source: source, LV: lv, Argv: argv}
}

// TestPlanOthersPvmove: the same interrupted move with no record of keel's
// starting it (an admin's, another node's), or a record of another move,
// is reported and never resumed; keel's own move that something still
// polls is left to it.
func TestPlanOthersPvmove(t *testing.T) {
	h := replayHost(t, "kill-pvmove")
	mv, src := capturedPvmove(t, h)
	own := keelsMove(t, src[0])
	otherLV := own
	otherLV.LV = "kvg/other"
	for _, tc := range []struct {
		name    string
		recs    []state.Pvmove
		pollers []model.Process
		want    FindingID
	}{
		{"no record", nil, nil, VGPVMoveOtherInterrupted},
		{"a record of another LV", []state.Pvmove{otherLV}, nil, VGPVMoveOtherInterrupted},
		{"no record, polled", nil, []model.Process{{PID: 4242, Argv: []string{"(lvm2)", "-b", src[0]}}}, VGPVMoveOther},
		{"no record, a pvmove of another PV", nil, []model.Process{{PID: 4245, Argv: []string{"pvmove", "/dev/nvme0n1"}}}, VGPVMoveOtherInterrupted},
		{"no record, lvmpolld", nil, []model.Process{{PID: 4243, Argv: []string{"/usr/sbin/lvm", "lvpoll", "--polloperation", "pvmove", "--interval", "15", mv.FullName}}}, VGPVMoveOther},
		{"keel's, polled", []state.Pvmove{own}, []model.Process{{PID: 4244, Argv: []string{"pvmove", "-n", "kvg/vsplit_vdata", src[0] + ":1000-1032", "/dev/nvme0n1"}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := replayHost(t, "kill-pvmove")
			h.Pollers = tc.pollers
			r := PlanWith(loadDesired(t, "kill-pvmove", h), h, Memory{FirstPass: true, Pvmoves: tc.recs})
			var got []string
			for _, f := range r.Findings {
				if strings.HasPrefix(string(f.ID), "vg.pvmove") {
					got = append(got, f.Key())
				}
			}
			want := []string{}
			if tc.want != "" {
				want = []string{string(tc.want) + "@" + mv.FullName}
			}
			if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("pvmove findings %q, want %q", got, want)
			}
			for _, a := range r.Actions {
				for _, c := range a.Commands {
					if len(c) > 0 && (c[0] == "pvmove" || c[0] == "lvremove") {
						t.Errorf("%s runs %q on a move keel may not resume", a.ID, c)
					}
				}
			}
			if tc.want == "" {
				return
			}
			f := findingByKey(t, r, want[0])
			if tc.want == VGPVMoveOther && !strings.Contains(f.Message, "pid "+strconv.Itoa(tc.pollers[0].PID)) {
				t.Errorf("message does not name the poller: %s", f.Message)
			}
			if tc.want == VGPVMoveOtherInterrupted && f.Remedy != "on the node that started it, resume it with pvmove "+src[0]+" or roll it back with pvmove --abort "+src[0] {
				t.Errorf("remedy %q", f.Remedy)
			}
			actionByID(t, r, string(tc.want)+":"+mv.FullName) // report only
		})
	}
}

// TestPlanInterruptedVDOCreate: keel killed while lvm2 made a VDO pool; the
// plain LV lvm2 committed first carries keel's tag, and keel goes on from
// the step its size shows.
func TestPlanInterruptedVDOCreate(t *testing.T) {
	h := replayHost(t, "kill-vdo-partial")
	d := loadDesired(t, "kill-vdo-partial", h)
	r := Plan(d, h)
	lv := h.LVs["kvg/vchurn"]
	if lv == nil || lv.SegType == "vdo-pool" || !hasTag(lv, CreateTag) {
		t.Fatalf("the capture holds no half-made kvg/vchurn with tag %s: %+v", CreateTag, lv)
	}
	f := findingByKey(t, r, "vdo.missing@kvg/vchurn")
	if !strings.Contains(f.Message, "stopped before it ended") {
		t.Errorf("message %q", f.Message)
	}
	a := actionByID(t, r, "vdo.create:kvg/vchurn")
	last := a.Commands[len(a.Commands)-1]
	if !slices.Equal(last, []string{"lvchange", "--deltag", CreateTag, "kvg/vchurn"}) {
		t.Errorf("last command %q, want the tag deleted", last)
	}
	for _, c := range a.Commands {
		if c[0] == "lvcreate" {
			t.Errorf("an lvcreate planned on the existing name: %q", c)
		}
	}
	if conv := a.Commands[len(a.Commands)-2]; conv[0] != "lvconvert" || !slices.Contains(conv, "kvg/vchurn") {
		t.Errorf("before the tag goes, want the lvconvert of kvg/vchurn, have %q", conv)
	}
}

// TestPlanUntaggedLVUnderPoolName: the same kill, left by a keel that did
// not tag the LV it makes: the plain LV under the pool's name has no tag,
// so keel cannot tell it from someone else's LV. It is reported and never
// converted; planning lvcreate again would fail on the name until
// reconcile.stuck.
func TestPlanUntaggedLVUnderPoolName(t *testing.T) {
	h := replayHost(t, "kill-vdo-partial-untagged")
	r := Plan(loadDesired(t, "kill-vdo-partial-untagged", h), h)
	if lv := h.LVs["kvg/vchurn"]; lv == nil || lv.SegType != "linear" || hasTag(lv, CreateTag) {
		t.Fatalf("the capture holds no untagged linear kvg/vchurn: %+v", lv)
	}
	reportedNotPlanned(t, r, "vdo.missing@kvg/vchurn", "not keel's", "vdo.create:kvg/vchurn")
}

// reportedNotPlanned checks that r holds the finding key, whose remedy
// says remedy, and no action id.
func reportedNotPlanned(t *testing.T, r Result, key, remedy, id string) {
	t.Helper()
	if f := findingByKey(t, r, key); !strings.Contains(f.Remedy, remedy) {
		t.Errorf("%s: remedy %q, want it to say %q", key, f.Remedy, remedy)
	}
	for _, x := range r.Actions {
		if x.ID == id {
			t.Errorf("planned %s: %q", id, x.Commands)
		}
	}
}

// TestPlanHalfMadeThinPool: keel killed while lvm2 wiped the metadata area
// of the thin pool it was making, the plain LV it commits first under the
// pool's name (create_pool, lib/metadata/pool_manip.c), with keel's tag.
// keel removes that LV and creates the pool again; running the same
// lvcreate again would fail with "already exists" until reconcile.stuck.
func TestPlanHalfMadeThinPool(t *testing.T) {
	h := replayHost(t, "kill-thin-partial")
	r := Plan(loadDesired(t, "kill-thin-partial", h), h)
	lv := h.LVs["kvg/tchurn"]
	if lv == nil || lv.SegType != "linear" || !hasTag(lv, CreateTag) {
		t.Fatalf("the capture holds no plain kvg/tchurn with tag %s: %+v", CreateTag, lv)
	}
	f := findingByKey(t, r, "thin.missing@kvg/tchurn")
	if !strings.Contains(f.Message, "stopped before it ended") {
		t.Errorf("message %q", f.Message)
	}
	a := actionByID(t, r, "thin.create:kvg/tchurn")
	if len(a.Commands) != 3 || !slices.Equal(a.Commands[0], []string{"lvremove", "-y", "kvg/tchurn"}) ||
		a.Commands[1][0] != "lvcreate" || !slices.Equal(a.Commands[2], []string{"lvchange", "--deltag", CreateTag, "kvg/tchurn"}) {
		t.Errorf("commands %q", a.Commands)
	}
	if f.Remedy != shellAnd(a.Commands) {
		t.Errorf("remedy %q, want the commands keel runs, as typed: %q", f.Remedy, shellAnd(a.Commands))
	}
	// The same LV without keel's tag is someone else's: reported, never
	// removed, and no lvcreate is tried.
	lv.Fields.Set("lv_tags", "")
	r = Plan(loadDesired(t, "kill-thin-partial", h), h)
	reportedNotPlanned(t, r, "thin.missing@kvg/tchurn", "never removes", "thin.create:kvg/tchurn")
}

// TestPlanInterruptedThinCreate: keel killed while lvm2 activated the thin
// pool it had just made; the pool still carries keel's tag, inactive, with
// its components active, which lvm2 will not activate the pool over. keel
// deactivates the components, activates the pool and drops the tag;
// `lvchange -ay kvg/tchurn` alone is refused by lvm2 until reconcile.stuck.
func TestPlanInterruptedThinCreate(t *testing.T) {
	h := replayHost(t, "kill-thin-inactive")
	r := Plan(loadDesired(t, "kill-thin-inactive", h), h)
	lv := h.LVs["kvg/tchurn"]
	if lv == nil || lv.SegType != "thin-pool" || lv.Active || !hasTag(lv, CreateTag) {
		t.Fatalf("the capture holds no inactive thin pool kvg/tchurn with tag %s: %+v", CreateTag, lv)
	}
	f := findingByKey(t, r, "thin.create_interrupted@kvg/tchurn")
	want := [][]string{
		{"lvchange", "-an", "kvg/tchurn_tdata", "kvg/tchurn_tmeta"},
		{"lvchange", "-ay", "kvg/tchurn"},
		{"lvchange", "--deltag", CreateTag, "kvg/tchurn"},
	}
	a := actionByID(t, r, "thin.create:kvg/tchurn")
	if !slices.EqualFunc(a.Commands, want, slices.Equal) {
		t.Errorf("commands %q, want %q", a.Commands, want)
	}
	if f.Remedy != shellAnd(want) {
		t.Errorf("remedy %q, want %q", f.Remedy, shellAnd(want))
	}
	for _, x := range r.Actions {
		if strings.HasPrefix(x.ID, "thin.create:") && x.ID != a.ID {
			t.Errorf("another creation planned: %s", x.ID)
		}
	}
}

// TestPlanThinPoolInactiveTable replays the states lvcreate --type
// thin-pool or lvchange -ay leave when killed between the pool's table load
// and its resume (built with dmsetup by e2e/remedies
// TestThinPoolInactiveTable): the thin-pool table is loaded but not live, in
// kvg-tchurn for a pool keel was still creating, or in kvg-tchurn-tpool for
// a pool in use (a VM disk on it), and it keeps _tdata and _tmeta open.
// lvchange -an of the components fails there ("is used by another device");
// lvchange -an and -ay of the pool bring it up.
func TestPlanThinPoolInactiveTable(t *testing.T) {
	up := [][]string{{"lvchange", "-an", "kvg/tchurn"}, {"lvchange", "-ay", "kvg/tchurn"}}
	for _, tc := range []struct {
		capture, device string
		tagged          bool
	}{
		{"thin-inactive-table", "kvg-tchurn", true},
		{"thin-inactive-tpool", "kvg-tchurn-tpool", false},
	} {
		t.Run(tc.capture, func(t *testing.T) {
			h := replayHost(t, tc.capture)
			lv := h.LVs["kvg/tchurn"]
			if lv == nil || lv.SegType != "thin-pool" || lv.Active || hasTag(lv, CreateTag) != tc.tagged {
				t.Fatalf("the capture holds no inactive thin pool kvg/tchurn (tag %s: %v): %+v", CreateTag, tc.tagged, lv)
			}
			if d, ok := h.DM[tc.device]; !ok || d != nil && len(d.Table) != 0 {
				t.Fatalf("the capture holds no %s without a live table: %+v", tc.device, d)
			}
			if c := h.LVs["kvg/tchurn_tdata"]; c == nil || !c.Active || !c.Open {
				t.Fatalf("the capture holds no open kvg/tchurn_tdata: %+v", c)
			}
			r := Plan(loadDesired(t, "thin-inactive-table", h), h)
			if f := findingByKey(t, r, "vg.inactive@kvg"); f.Remedy != shellAnd(up) {
				t.Errorf("vg.inactive remedy %q, want %q", f.Remedy, shellAnd(up))
			}
			if !tc.tagged {
				for _, a := range r.Actions {
					if a.Object == "kvg/tchurn" {
						t.Errorf("an action on a pool keel is not creating: %s", a.ID)
					}
				}
				return
			}
			want := append(slices.Clone(up), []string{"lvchange", "--deltag", CreateTag, "kvg/tchurn"})
			if a := actionByID(t, r, "thin.create:kvg/tchurn"); !slices.EqualFunc(a.Commands, want, slices.Equal) {
				t.Errorf("commands %q, want %q", a.Commands, want)
			}
			f := findingByKey(t, r, "thin.create_interrupted@kvg/tchurn")
			if f.Remedy != shellAnd(want) {
				t.Errorf("remedy %q, want %q", f.Remedy, shellAnd(want))
			}
			if !strings.Contains(f.Observed, "table loaded but not live") {
				t.Errorf("observed %q does not say the pool's table is not live", f.Observed)
			}
		})
	}
}

func findingByKey(t *testing.T, r Result, key string) Finding {
	t.Helper()
	for _, f := range r.Findings {
		if f.Key() == key {
			return f
		}
	}
	t.Fatalf("no finding %s in %q", key, keys(r.Findings))
	return Finding{}
}

func actionByID(t *testing.T, r Result, id string) Action {
	t.Helper()
	var ids []string
	for _, a := range r.Actions {
		if a.ID == id {
			return a
		}
		ids = append(ids, a.ID)
	}
	t.Fatalf("no action %s in %q", id, ids)
	return Action{}
}

// TestPlanPvmoveOrphan: the state a pvmove leaves when it stops between the
// two commits of its finish, captured by e2e/kill before its loop (a
// hand-run pvmove of the journal back to the NVMe while a shell held
// kvg-pvmove0 open: "ABORTING: Unable to deactivate temporary volume"), with
// kvg-other's live table then pointed at pvmove0's device, as a kill between
// a commit and the resume of the moved LVs leaves it. Before
// vg.pvmove_orphan keel raised nothing for it and planned nothing.
func TestPlanPvmoveOrphan(t *testing.T) {
	h := replayHost(t, "kill-pvmove-orphan")
	mv := h.LVs["kvg/pvmove0"]
	if mv == nil || mv.SegType != "error" || mv.Attr == "" || mv.Attr[0] == 'p' {
		t.Fatalf("the capture holds no error-segment kvg/pvmove0 without the pvmove flag: %+v", mv)
	}
	r := Plan(loadDesired(t, "kill-pvmove-orphan", h), h)
	f := findingByKey(t, r, "vg.pvmove_orphan@kvg/pvmove0")
	if !strings.Contains(f.Message, "kvg/other") {
		t.Errorf("message does not name the LV whose table still maps it: %s", f.Message)
	}
	want := [][]string{{"lvchange", "--refresh", "kvg/other"}, {"lvremove", "-y", "kvg/pvmove0"}}
	if f.Remedy != "lvchange --refresh kvg/other && lvremove -y kvg/pvmove0" {
		t.Errorf("remedy %q", f.Remedy)
	}
	a := actionByID(t, r, "vg.pvmove_orphan:kvg/pvmove0")
	if a.Kind != KindCommand || a.Class != Live || !slices.EqualFunc(a.Commands, want, slices.Equal) {
		t.Errorf("action %s %v: commands %q, want %q", a.Kind, a.Class, a.Commands, want)
	}
	for _, x := range r.Findings {
		if x.ID == "vg.pvmove_interrupted" {
			t.Errorf("the leftover is also reported as a pvmove to resume: %s", x.Message)
		}
	}
}

// TestPlanPvmoveOrphanVariants: the leftover held by no LV is removed
// alone; held open by something else, or not an error segment, it is
// reported and nothing is run.
func TestPlanPvmoveOrphanVariants(t *testing.T) {
	for _, tc := range []struct {
		name     string
		edit     func(h *model.Host, mv *model.LV)
		commands [][]string
	}{
		{"free", func(h *model.Host, mv *model.LV) { dropHolders(h, mv) }, [][]string{{"lvremove", "-y", "kvg/pvmove0"}}},
		{"held by a process", func(h *model.Host, mv *model.LV) { dropHolders(h, mv); mv.Open = true }, nil},
		{"held by another device", func(h *model.Host, mv *model.LV) {
			_, q := newPlanner(h).dmQueue(mv.DMName)
			q.Holders = []string{"dm-99"}
			h.Queues["dm-99"] = &model.Queue{Device: "dm-99", DMName: "someone-else"}
		}, nil},
		{"not an error segment", func(h *model.Host, mv *model.LV) { dropHolders(h, mv); mv.SegType = "linear" }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := replayHost(t, "kill-pvmove-orphan")
			mv := h.LVs["kvg/pvmove0"]
			tc.edit(h, mv)
			r := Plan(loadDesired(t, "kill-pvmove-orphan", h), h)
			f := findingByKey(t, r, "vg.pvmove_orphan@kvg/pvmove0")
			a := actionByID(t, r, "vg.pvmove_orphan:kvg/pvmove0")
			if tc.commands == nil {
				if a.Kind != KindNone {
					t.Errorf("planned %q, want a report only (remedy %q)", a.Commands, f.Remedy)
				}
				if strings.Contains(f.Remedy, "refresh") {
					t.Errorf("remedy refreshes an LV that does not hold it: %q", f.Remedy)
				}
				return
			}
			if !slices.EqualFunc(a.Commands, tc.commands, slices.Equal) {
				t.Errorf("commands %q, want %q", a.Commands, tc.commands)
			}
		})
	}
}

// dropHolders makes lv's device held by nothing, as after the moved LVs'
// refresh.
func dropHolders(h *model.Host, lv *model.LV) {
	if _, q := newPlanner(h).dmQueue(lv.DMName); q != nil {
		q.Holders = nil
	}
	lv.Open = false
}

// TestPlanUnfinishedVDOActivation: keel killed with its process group while
// lvconvert --type vdo-pool activated the pool it had just committed
// (e2e/kill, kind vdo-partial). The capture holds the state the kill left
// most often on the guest: kvg/vchurnlv inactive, kvg/vchurn_vdata active
// under a kvg-vchurn-vpool device with no live table (dm-vdo's load cut
// short), the pool tagged keel_create. lvm2 refuses lvchange -ay of the VDO
// LV then ("prohibited while logical volume kvg/vchurn_vdata is active"),
// and lvchange -an of _vdata ("used by another device"); lvchange -an of the
// pool takes the stack down (each tried on the guest). Reporting only
// vg.inactive with the refused remedy leaves the stack down, and the kill
// loop fails.
func TestPlanUnfinishedVDOActivation(t *testing.T) {
	h := replayHost(t, "kill-vdo-unfinished")
	pool, lv := h.LVs["kvg/vchurn"], h.LVs["kvg/vchurnlv"]
	if pool == nil || pool.SegType != "vdo-pool" || !hasTag(pool, CreateTag) || lv == nil || lv.Active {
		t.Fatalf("the capture holds no pool kvg/vchurn with tag %s under an inactive kvg/vchurnlv: %+v %+v", CreateTag, pool, lv)
	}
	if d, ok := h.DM["kvg-vchurn-vpool"]; !ok || d != nil && len(d.Table) != 0 {
		t.Fatalf("the capture holds no kvg-vchurn-vpool without a live table: %+v", d)
	}
	r := Plan(loadDesired(t, "kill-vdo-unfinished", h), h)
	want := [][]string{
		{"lvchange", "-an", "kvg/vchurn"},
		{"lvchange", "-ay", "kvg/vchurnlv"},
		{"lvchange", "--deltag", CreateTag, "kvg/vchurn"},
	}
	a := actionByID(t, r, "vdo.create:kvg/vchurn")
	if !slices.EqualFunc(a.Commands, want, slices.Equal) {
		t.Errorf("commands %q, want %q", a.Commands, want)
	}
	if f := findingByKey(t, r, "vdo.create_interrupted@kvg/vchurn"); f.Remedy != shellAnd(want) {
		t.Errorf("remedy %q, want %q", f.Remedy, shellAnd(want))
	}
	// vg.inactive's remedy, as typed, takes the stack down first too.
	if f := findingByKey(t, r, "vg.inactive@kvg"); f.Remedy != shellAnd(want[:2]) {
		t.Errorf("vg.inactive remedy %q, want %q", f.Remedy, shellAnd(want[:2]))
	}
	// The same pool without keel's tag is someone else's: reported with the
	// same remedy, never acted on.
	pool.Fields.Set("lv_tags", "")
	r = Plan(loadDesired(t, "kill-vdo-unfinished", h), h)
	reportedNotPlanned(t, r, "vg.inactive@kvg", shellAnd(want[:2]), "vdo.create:kvg/vchurn")
	for _, f := range r.Findings {
		if f.ID == "vdo.create_interrupted" {
			t.Errorf("untagged pool: %s", f.Key())
		}
	}
}

// TestPlanUnfinishedVDOTagOnly: keel killed after lvm2 had activated the
// VDO LV, before keel dropped its tag: only the tag is left to drop.
func TestPlanUnfinishedVDOTagOnly(t *testing.T) {
	h := replayHost(t, "kill-vdo-tagged-active")
	if pool, lv := h.LVs["kvg/vchurn"], h.LVs["kvg/vchurnlv"]; pool == nil || !hasTag(pool, CreateTag) || lv == nil || !lv.Active {
		t.Fatalf("the capture holds no tagged pool kvg/vchurn under an active kvg/vchurnlv")
	}
	r := Plan(loadDesired(t, "kill-vdo-tagged-active", h), h)
	want := [][]string{{"lvchange", "--deltag", CreateTag, "kvg/vchurn"}}
	if a := actionByID(t, r, "vdo.create:kvg/vchurn"); !slices.EqualFunc(a.Commands, want, slices.Equal) {
		t.Errorf("commands %q, want %q", a.Commands, want)
	}
	for _, f := range r.Findings {
		if f.ID == "vg.inactive" {
			t.Errorf("an active VDO LV reported inactive: %s", f.Message)
		}
	}
}

// TestPlanOthersPvmoveCaptured replays the captures of
// e2e/ownership/pvmove.sh: an admin's `pvmove -b` of kvg/adm, in progress
// (its poller, the child lvm2 renames "(lvm2)", read from /proc) and then
// interrupted (the poller killed, no lvmpolld). Each is reported, and no
// pvmove or lvremove is planned, with or without a record of keel's own
// earlier move from the same VG.
func TestPlanOthersPvmoveCaptured(t *testing.T) {
	for _, tc := range []struct {
		name string
		want FindingID
	}{{"pvmove-other-in-progress", VGPVMoveOther}, {"pvmove-other-interrupted", VGPVMoveOtherInterrupted}} {
		t.Run(tc.name, func(t *testing.T) {
			h := replayHost(t, tc.name)
			mv, src := capturedPvmove(t, h)
			if tc.want == VGPVMoveOther && len(h.Pollers) == 0 {
				t.Fatal("the capture holds no poller")
			}
			// keel's own move of the journal, recorded in the same VG
			// from the same HDD, is not this one: it moved another LV.
			rec := keelsMove(t, src[0])
			r := PlanWith(loadDesired(t, tc.name, h), h, Memory{FirstPass: true, Pvmoves: []state.Pvmove{rec}})
			f := findingByKey(t, r, string(tc.want)+"@"+mv.FullName)
			if !strings.Contains(f.Message, "kvg/adm") {
				t.Errorf("message does not name the moved LV: %s", f.Message)
			}
			if tc.want == VGPVMoveOther && !strings.Contains(f.Message, "(lvm2)") {
				t.Errorf("message does not name the poller: %s", f.Message)
			}
			for _, a := range r.Actions {
				for _, c := range a.Commands {
					if len(c) > 0 && (c[0] == "pvmove" || c[0] == "lvremove") {
						t.Errorf("%s runs %q on the admin's move", a.ID, c)
					}
				}
			}
			// Recorded as keel's, the interrupted move is resumed with
			// keel's command; the polled one is left to its poller.
			own := state.Pvmove{VG: "kvg", Source: src[0], LV: "kvg/adm", Argv: []string{"pvmove", "-n", "kvg/adm", src[0], "/dev/mapper/kslow"}}
			r = PlanWith(loadDesired(t, tc.name, h), h, Memory{FirstPass: true, Pvmoves: []state.Pvmove{own}})
			var resumed [][]string
			for _, a := range r.Actions {
				if a.ID == "vg.pvmove_interrupted:"+mv.FullName {
					resumed = a.Commands
				}
			}
			if want := tc.want == VGPVMoveOtherInterrupted; (resumed != nil) != want || want && !slices.Equal(resumed[0], own.Argv) {
				t.Errorf("recorded as keel's: resume %q, want one: %v", resumed, want)
			}
		})
	}
}
