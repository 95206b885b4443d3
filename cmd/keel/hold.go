package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/keel-storage/keel/reconcile/activation"
	"github.com/keel-storage/keel/reconcile/converge"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/state"
	"github.com/keel-storage/keel/schema/spec"
)

// runHold implements `keel hold OBJECT --reason TEXT [--until TIME]`: an
// operator's hold, recorded in keel's state, under which keel changes
// nothing on OBJECT (plan.hold) and its bcache udev rule leaves a held
// bcache device out, rewritten here at once. Exit 0: held; 2: bad
// arguments, or the state could not be written.
func runHold(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("hold", "OBJECT",
		"Puts OBJECT on hold for storage surgery by hand: until keel release OBJECT (or TIME), keel",
		"changes nothing on it (keel check reports hold.active and what keel would do), and keel's",
		"bcache udev rule has no line for a held bcache device. OBJECT is a VG (with its LVs), vg/lv,",
		"a device-mapper name, or a bcache device by its declared name, kernel name or bcache:<uuid>.",
		"TIME is a date (YYYY-MM-DD: the hold ends after that day, UTC), an RFC 3339 time, or a",
		"duration from now (90m, 8h).",
		"Exit status: 0 held, 2 bad arguments or keel's state file could not be written.")
	reason := fs.String("reason", "", "why the object is held, a `TEXT` shown by keel check, status, the journal and the metrics (required)")
	until := fs.String("until", "", "when the hold lapses: `TIME` (YYYY-MM-DD, RFC 3339, or a duration such as 8h); default: until keel release")
	var configs multiFlag
	obj, code, ok := parseObject(fs, &configs, args, "hold", stdout, stderr)
	if !ok {
		return code
	}
	if strings.TrimSpace(*reason) == "" {
		return usageError(fs, stderr, "--reason is required: say why %s is held", obj)
	}
	now := time.Now()
	h := state.Hold{Reason: *reason, Since: now.UTC()}
	if *until != "" {
		t, err := parseUntil(*until, now)
		if err != nil {
			return usageError(fs, stderr, "--until %q: %v", *until, err)
		}
		if !t.After(now) {
			return usageError(fs, stderr, "--until %s is not in the future", state.Stamp(t))
		}
		h.Until = t
	}
	if _, err := stateStore().Update(func(st *state.State) error {
		st.Holds[obj] = h
		return nil
	}); err != nil {
		fmt.Fprintf(stderr, "keel hold: %s: %v\n", obj, err)
		return exitError
	}
	end := "keel release " + obj
	if !h.Until.IsZero() {
		end = state.Stamp(h.Until) + " (or keel release " + obj + ")"
	}
	fmt.Fprintf(stdout, "%s held until %s: %s\n", obj, end, h.Reason)
	rewriteBcacheRule("hold", configs, stdout, stderr)
	return exitOK
}

// runRelease implements `keel release OBJECT`: the hold ends, and keel
// acts on the object again from its next pass. Exit 0: released (or not
// held); 2: bad arguments, or the state could not be written.
func runRelease(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("release", "OBJECT",
		"Ends the hold keel hold put on OBJECT: keel acts on it again from its next pass (keel apply",
		"converges it now), and its bcache udev rule has the device's line again.",
		"Exit status: 0 released or not held, 2 bad arguments or keel's state file could not be written.")
	var configs multiFlag
	obj, code, ok := parseObject(fs, &configs, args, "release", stdout, stderr)
	if !ok {
		return code
	}
	held := false
	if _, err := stateStore().Update(func(st *state.State) error {
		_, held = st.Holds[obj]
		delete(st.Holds, obj)
		return nil
	}); err != nil {
		fmt.Fprintf(stderr, "keel release: %s: %v\n", obj, err)
		return exitError
	}
	if !held {
		fmt.Fprintf(stdout, "%s was not held\n", obj)
		return exitOK
	}
	fmt.Fprintf(stdout, "%s released: keel acts on it again from its next pass (keel apply converges it now)\n", obj)
	rewriteBcacheRule("release", configs, stdout, stderr)
	return exitOK
}

// parseObject adds the desired-state flag to fs, parses args and returns
// the one OBJECT they name; ok is false when the command must exit with
// code (help, or a usage error saying what is wrong).
func parseObject(fs *flag.FlagSet, configs *multiFlag, args []string, verb string, stdout, stderr io.Writer) (obj string, code int, ok bool) {
	desiredFlag(fs, configs)
	if code, ok := parseArgs(fs, objectLast(args), stdout, stderr); !ok {
		return "", code, false
	}
	if fs.NArg() != 1 {
		return "", usageError(fs, stderr, "want one OBJECT to %s", verb), false
	}
	return fs.Arg(0), exitOK, true
}

// objectLast moves a leading OBJECT behind the flags: the flag package
// stops at the first argument that is not a flag, and "keel hold bcache0
// --reason …" is how the command reads best.
func objectLast(args []string) []string {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return append(slices.Clone(args[1:]), args[0])
	}
	return args
}

// parseUntil reads --until: a date (the hold lasts through that day, UTC,
// as a waiver's expires does), an RFC 3339 time, or a duration from now.
func parseUntil(s string, now time.Time) (time.Time, error) {
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		return d.Add(24 * time.Hour), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(d).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("not a date (YYYY-MM-DD), an RFC 3339 time or a positive duration")
}

// rewriteBcacheRule installs keel's bcache udev rule as the holds now in
// force make it, so that a hold reaches what udev writes at once rather
// than at keel's next pass. Only when the rule is installed and differs;
// what cannot be done is said in one line (the next pass does it).
func rewriteBcacheRule(name string, configs []string, stdout, stderr io.Writer) {
	later := "keel's next pass (or keel apply) rewrites " + activation.BcacheRule
	if geteuid() != 0 {
		fmt.Fprintf(stderr, "keel %s: not root: %s\n", name, later)
		return
	}
	cfg, src, h, code := loadAndProbe(name, configs, "", time.Minute, io.Discard)
	if code != exitOK || cfg == nil {
		fmt.Fprintf(stderr, "keel %s: the desired state or the host could not be read: %s\n", name, later)
		return
	}
	if kf := h.KeelFiles[activation.BcacheRule]; kf == nil || kf.Missing || len(cfg.Bcache) == 0 {
		return
	}
	if cfg.Agent.Mode == spec.AgentAudit {
		// Audit mode changes nothing on the host, keel's files included.
		fmt.Fprintf(stderr, "keel %s: agent.mode is \"audit\": %s is left as it is\n", name, activation.BcacheRule)
		return
	}
	mem := liveHolds(plan.Memory{Now: time.Now()})
	files, err := activation.RulesHeld(cfg, h, converge.LinkResolver(src.FS), plan.HeldBcache(cfg, h, mem))
	if err != nil {
		fmt.Fprintf(stderr, "keel %s: %v: %s\n", name, err, later)
		return
	}
	for _, f := range files {
		if f.Path != activation.BcacheRule || h.KeelFiles[f.Path].Content == f.Content {
			continue
		}
		written, err := converge.InstallRules(context.Background(), []activation.RuleFile{f}, "/", src.Runner)
		if err != nil {
			fmt.Fprintf(stderr, "keel %s: %s: %v: %s\n", name, f.Path, err, later)
			return
		}
		for _, p := range written {
			fmt.Fprintf(stdout, "wrote %s\n", p)
		}
	}
}

// liveHolds adds the holds of this host's keel state to mem (none when it
// cannot be read: keel check then says why elsewhere).
func liveHolds(mem plan.Memory) plan.Memory {
	if st, err := stateStore().Load(); err == nil {
		mem.Holds = st.Holds
	}
	return mem
}

// writeHolds prints the holds of this host's keel state for keel status.
func writeHolds(w io.Writer, now time.Time) {
	st, err := stateStore().Load()
	if err != nil || len(st.Holds) == 0 {
		return
	}
	fmt.Fprintln(w, "\nholds (keel hold; keel changes nothing on these):")
	for _, obj := range slices.Sorted(maps.Keys(st.Holds)) {
		h := st.Holds[obj]
		end := "keel release"
		if !h.Until.IsZero() {
			end = state.Stamp(h.Until)
		}
		lapsed := ""
		if !h.InForce(now) {
			lapsed = " (lapsed: holds nothing)"
		}
		fmt.Fprintf(w, "  %s  until %s%s: %s\n", obj, end, lapsed, h.Reason)
	}
}

// heldJSON is one hold in keel status --format json.
type heldJSON struct {
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
	Until  time.Time `json:"until,omitzero"` // absent: until keel release
	// InForce is false for a hold whose time has passed: it holds nothing.
	InForce bool `json:"inForce"`
}

// holdsJSON renders holds for keel status --format json, by object.
func holdsJSON(holds map[string]state.Hold, now time.Time) map[string]heldJSON {
	out := make(map[string]heldJSON, len(holds))
	for obj, h := range holds {
		out[obj] = heldJSON{Reason: h.Reason, Since: h.Since, Until: h.Until, InForce: h.InForce(now)}
	}
	return out
}
