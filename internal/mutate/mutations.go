package main

// Mutation is a one-line change that breaks one of keel's safety rules, and
// the tests that must fail on it.
type Mutation struct {
	// Rule names the safety rule the mutation breaks.
	Rule string
	// File is the file it changes, relative to the module root.
	File string
	// Old is the exact text to replace; it must occur in File exactly
	// once. It may span lines to be unique, but the change is on its
	// last line.
	Old string
	// New replaces Old.
	New string
	// Pkgs are the packages whose tests guard the rule, as go test takes
	// them (./reconcile/plan/).
	Pkgs []string
	// Run is go test's -run pattern for the tests that kill the mutation.
	Run string
}

// mutations is the list `make mutate` applies. Every safety rule keel adds
// gets a line here with the test that guards it; docs/testing.md shows the
// list (go run ./internal/mutate -list).
var mutations = []Mutation{
	{Rule: "removal identity: the daemon judges an absent LV",
		File: "reconcile/plan/removal/identity.go",
		Old:  "\tif !r.RequireAbsent {", New: "\tif true {",
		Pkgs: []string{"./reconcile/plan/removal/"}, Run: `^TestPlanIdentityOnRecordedHost$`},
	{Rule: "removal identity: an LV keel removed is never removed twice",
		File: "reconcile/state/identity.go",
		Old:  "\t\tif b.Removed.IsZero() {", New: "\t\tif true {",
		Pkgs: []string{"./reconcile/state/"}, Run: `^TestJudge$`},
	{Rule: "removal identity: the bound LV is the one with the recorded uuid",
		File: "reconcile/state/identity.go",
		Old:  "\t\tif b.UUID != lv.UUID {", New: "\t\tif b.UUID == lv.UUID {",
		Pkgs: []string{"./reconcile/state/", "./reconcile/plan/removal/"}, Run: `^(TestJudge|TestPlanResumeChecksIdentity)$`},
	{Rule: "removal identity: an LV created after the name was first seen is another LV",
		File: "reconcile/state/identity.go",
		Old:  "\tcase !lv.Created.Before(first):", New: "\tcase !lv.Created.Before(first) && false:",
		Pkgs: []string{"./reconcile/state/", "./reconcile/plan/removal/"}, Run: `^(TestJudge|TestPlanIdentityOnRecordedHost)$`},
	{Rule: "VG identity: another vg_uuid under the declared name is held",
		File: "reconcile/state/vg.go",
		Old:  `	if !known || rec.UUID == "" || uuid == "" || rec.UUID == uuid {`, New: "\tif true {",
		Pkgs: []string{"./reconcile/state/", "./reconcile/plan/removal/"}, Run: `^(TestJudgeVG|TestRemovalRefusedUnderAnotherUUID)$`},
	{Rule: "shared refusal: no LV of a shared VG is cleared",
		File: "reconcile/plan/removal/shared.go",
		Old:  "\ts, ok := o.shared[vg]\n\tif !ok {", New: "\ts, ok := o.shared[vg]\n\tif true || !ok {",
		Pkgs: []string{"./reconcile/plan/removal/"}, Run: `^TestGuardSharedVGRefused$`},
	{Rule: "shared gate: a file action that runs an LVM command is held on a shared VG",
		File: "reconcile/plan/plan_shared.go",
		Old:  "\t\t\tif len(c) == 0 || c[0] != \"udevadm\" {", New: "\t\t\tif len(c) == 0 {",
		Pkgs: []string{"./reconcile/plan/"}, Run: `^TestPlanSharedVGHoldsAutoextendProfile$`},
	{Rule: "guest refusal: no LV a guest config names is cleared",
		File: "reconcile/plan/removal/guard.go",
		Old:  "\t\tif err := o.refuseGuests(t.VG, t.LV); err != nil {", New: "\t\tif err := o.refuseGuests(t.VG, t.LV); err != nil && false {",
		Pkgs: []string{"./reconcile/plan/removal/"}, Run: `^TestPlanRefusesReferenced`},
	{Rule: "volume chain: a Proxmox VE qcow2 chain is removed whole or not at all",
		File: "reconcile/plan/removal/chain.go",
		Old:  "\t\tif m != name && !covered(m) {", New: "\t\tif m != name && !covered(m) && false {",
		Pkgs: []string{"./reconcile/plan/removal/", "./reconcile/plan/"}, Run: `^(TestChainWholeOrNotAtAll|TestPlanAbsentChain)$`},
	{Rule: "volume chain: no snapshot LV of a volume a guest names is cleared",
		File: "reconcile/plan/removal/guard.go",
		Old:  "\t\tif err := o.refuseGuests(vg, c.Volume); err != nil {", New: "\t\tif err := o.refuseGuests(vg, c.Volume); err != nil && false {",
		Pkgs: []string{"./reconcile/plan/removal/"}, Run: `^TestChainSnapshotOfVolumeInUse$`},
	{Rule: "in-use check: an open LV is refused when planned",
		File: "reconcile/plan/removal/plan.go",
		Old:  "\tif lv.Open {", New: "\tif lv.Open && false {",
		Pkgs: []string{"./reconcile/plan/removal/"}, Run: `^TestPlanRefusals$`},
	{Rule: "in-use check: a second opener stops the wipe",
		File: "reconcile/apply/wipe/inuse.go",
		Old:  "\t\tif n <= own {", New: "\t\tif n <= own+1 {",
		Pkgs: []string{"./reconcile/apply/wipe/"}, Run: `^(TestRemoverCheckRefusesPlainOpener|TestRemoverStopsWhenOpenedDuringWipe)$`},
	{Rule: "wipe resume: a checkpoint of another size is not trusted",
		File: "reconcile/apply/wipe/remove.go",
		Old:  "\t\tif m == cp.Mode && cp.Size == t.Size && cp.Offset <= cp.Size {", New: "\t\tif m == cp.Mode && cp.Offset <= cp.Size {",
		Pkgs: []string{"./reconcile/apply/wipe/"}, Run: `^TestWipeResumesFromCheckpoint$`},
	{Rule: "autoextend ceiling: autoextend is turned off before a step would pass the maximum",
		File: "reconcile/plan/plan_autoextend.go",
		Old:  "\toff := next > maxBytes\n", New: "\toff := next >= maxBytes\n",
		Pkgs: []string{"./reconcile/plan/"}, Run: `^(TestAutoextendThin|TestAutoextendFromCapture|TestAutoextendVDO)$`},
	{Rule: "filter alias rule: the first entry matching an alias decides it",
		File: "lvm/lvmregex/dfa.go",
		Old:  "e >= 0 && (acc < 0 || e < acc)", New: "e >= 0 && (acc < 0 || e > acc)",
		Pkgs: []string{"./lvm/lvmregex/"}, Run: `^(TestDecide|TestDecideAgreesWithEveryRegex)$`},
	{Rule: "lvm.conf editor: every global_filter occurrence is set",
		File: "reconcile/apply/lvmconf/edit.go",
		Old:  "\t\t\tif slicesEqual(cur, ch.GlobalFilter) {\n\t\t\t\tcontinue", New: "\t\t\tif slicesEqual(cur, ch.GlobalFilter) {\n\t\t\t\tbreak",
		Pkgs: []string{"./reconcile/apply/lvmconf/"}, Run: `^TestEditEveryGlobalFilter$`},
	{Rule: "journal finding: a recovery journal off the fast PVs is reported",
		File: "reconcile/plan/plan_split.go",
		Old:  "\tif len(tailOff) == 0 {", New: "\tif len(tailOff) >= 0 {",
		Pkgs: []string{"./reconcile/plan/"}, Run: `^(TestPlanScenarios|TestJournalMoveWithoutRoom)$`},
	{Rule: "journal finding: the journal and slab summary are told from the head",
		File: "reconcile/plan/plan_split.go",
		Old:  "\t\t\tif isTailRegion(r.Name) {", New: "\t\t\tif !isTailRegion(r.Name) {",
		Pkgs: []string{"./reconcile/plan/"}, Run: `^(TestPlanScenarios|TestJournalMoveWithoutRoom)$`},
	{Rule: "journal finding: free space equal to the journal's extents is room",
		File: "reconcile/plan/plan_split.go",
		Old:  "\t\tif free >= need && dest == \"\" {", New: "\t\tif free > need && dest == \"\" {",
		Pkgs: []string{"./reconcile/plan/"}, Run: `^TestJournalMoveRoomBoundary$`},
	{Rule: "activation order: an upper VG waits for its lower VGs",
		File: "reconcile/activation/order.go",
		Old:  "\t\t\tok = ok && active[lvm.Split(lv).VG]", New: "\t\t\tok = ok || active[lvm.Split(lv).VG]",
		Pkgs: []string{"./reconcile/activation/"}, Run: `^TestRunnableWaitsForLowerVG$`},
	{Rule: "allowlist: only listed programs run",
		File: "probes/hostio/allowlist.go",
		Old:  "\tif !allowed[name] {", New: "\tif !allowed[name] && false {",
		Pkgs: []string{"./probes/hostio/"}, Run: `^(TestValidateArgv|TestAllowlistedRunner)$`},
	{Rule: "allowlist: an absolute path must be clean",
		File: "probes/hostio/allowlist.go",
		Old:  "\t\tif !path.IsAbs(name) || path.Clean(name) != name {", New: "\t\tif !path.IsAbs(name) {",
		Pkgs: []string{"./probes/hostio/"}, Run: `^TestValidateArgv$`},
	{Rule: "allowlist: no argument holds a newline",
		File: "probes/hostio/allowlist.go",
		Old:  "\t\tif strings.ContainsAny(a, \"\\x00\\n\") {", New: "\t\tif strings.ContainsAny(a, \"\\x00\") {",
		Pkgs: []string{"./probes/hostio/"}, Run: `^TestValidateArgv$`},
	{Rule: "atomic write: the file is synced before the rename",
		File: "reconcile/atomicfile/atomicfile.go",
		Old:  "\t\terr = fsync(f)", New: "\t\terr = nil",
		Pkgs: []string{"./reconcile/atomicfile/"}, Run: `^TestWriteSyncsFileThenDirectory$`},
	{Rule: "atomic write: the directory is synced after the rename",
		File: "reconcile/atomicfile/atomicfile.go",
		Old:  "\tif err := fsync(d); err != nil {", New: "\tif err := error(nil); err != nil {",
		Pkgs: []string{"./reconcile/atomicfile/"}, Run: `^TestWriteSyncsFileThenDirectory$`},
}
