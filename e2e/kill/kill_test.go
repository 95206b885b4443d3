//go:build e2e

package kill

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
)

// kinds are the steps scenario.sh kills keel in, in its rotation order.
var kinds = []string{"lvmconf", "udev", "vdo-lvcreate", "vdo-split", "vdo-lvconvert", "vdo-partial", "thin-lvcreate", "thin-partial", "pvmove", "wipe-rename", "wipe-remove"}

// killReport is what the killer wrote for one iteration.
type killReport struct {
	TriggerSeen bool     `json:"trigger_seen"`
	Trigger     string   `json:"trigger"`
	DelayMS     int64    `json:"delay_ms"`
	Group       bool     `json:"group"`
	Killed      bool     `json:"killed"`
	AfterMS     int64    `json:"after_ms"`
	Running     []string `json:"running"`
	LastCommand string   `json:"last_command"`
	Exit        int      `json:"exit"`
}

// checkReport is the part of keel check's JSON report the test reads.
type checkReport struct {
	Findings []struct {
		ID       string `json:"id"`
		Severity string `json:"severity"`
		Object   string `json:"object"`
	} `json:"findings"`
}

// stateFile is the part of keel's state file the test reads.
type stateFile struct {
	Absent map[string]struct {
		Bound []struct {
			UUID    string    `json:"uuid"`
			Removed time.Time `json:"removed"`
		} `json:"bound"`
	} `json:"absent"`
}

func TestKillLoop(t *testing.T) {
	n := len(kinds)
	if s := os.Getenv("KEEL_KILL_ITERATIONS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("KEEL_KILL_ITERATIONS=%q: want a positive number", s)
		}
		n = v
	}
	seed := time.Now().UnixNano() % 100000
	if s := os.Getenv("KEEL_KILL_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("KEEL_KILL_SEED=%q: %v", s, err)
		}
		seed = v
	}
	var budget time.Duration
	if s := os.Getenv("KEEL_KILL_BUDGET"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("KEEL_KILL_BUDGET=%q: %v", s, err)
		}
		budget = d
	}
	var deadline time.Time
	if s := os.Getenv("KEEL_KILL_DEADLINE"); s != "" {
		d, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatalf("KEEL_KILL_DEADLINE=%q: want RFC 3339 time: %v", s, err)
		}
		deadline = d
	}
	// KEEL_KILL_KINDS: a subset of kinds, in that order, instead of the
	// whole rotation (to aim the loop at one step).
	only := strings.Fields(os.Getenv("KEEL_KILL_KINDS"))
	for _, k := range only {
		if !slices.Contains(kinds, k) {
			t.Fatalf("KEEL_KILL_KINDS: unknown kind %q (kinds: %s)", k, strings.Join(kinds, " "))
		}
	}
	t.Logf("kill loop: %d iterations, seed %d (KEEL_KILL_SEED=%d reruns the same kill points), time budget %s, deadline %v", n, seed, seed, budget, deadline)
	root := guest.RepoRoot(t)
	killer := filepath.Join(t.TempDir(), "killer")
	build := exec.Command("go", "build", "-o", killer, "./e2e/kill/killer")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./e2e/kill/killer: %v\n%s", err, out)
	}
	files := map[string][]byte{}
	for rel, as := range map[string]string{killer: "killer", filepath.Join(root, "e2e/kill/scenario.sh"): "kill.sh"} {
		b, err := os.ReadFile(rel)
		if err != nil {
			t.Fatal(err)
		}
		files[as] = b
	}
	if dir := os.Getenv("KEEL_KILL_JUDGE"); dir != "" {
		// Judge the $OUT of a loop run by hand (e2e/vm-run.sh with the
		// same share) instead of booting a guest.
		judge(t, n, func(name string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, name)) }, 0)
		return
	}
	// The snapshots of the states worth a fixture are taken only when
	// KEEL_KILL_OUT keeps them (each costs seconds under TCG).
	snapshots := 0
	if os.Getenv("KEEL_KILL_OUT") != "" {
		snapshots = 1
	}
	r := guest.Run(t, guest.Spec{
		Disks: []guest.Disk{{Kind: guest.NVMe, Size: "20G", Serial: "nvme0"},
			{Kind: guest.HDD, Size: "20G", Serial: "hdd1"}},
		Files: files, Keel: true, Mem: "3G",
		Script: fmt.Sprintf("KILL_ITERATIONS=%d KILL_SEED=%d KILL_BUDGET=%d KILL_DEADLINE=%d KILL_KINDS=%q KILL_SNAPSHOTS=%d exec bash /mnt/host/kill.sh",
			n, seed, int(budget.Seconds()), max(deadline.Unix(), 0), strings.Join(only, " "), snapshots),
		Timeout: guestTimeout(n, budget, deadline),
	})
	t.Logf("guest wall time %.0fs for %d iterations", r.Wall.Seconds(), n)
	if dir := os.Getenv("KEEL_KILL_OUT"); dir != "" {
		// Keep every iteration's files (command logs, keel's state, the
		// snapshot of an interrupted pvmove) after the test's directory goes.
		if err := os.CopyFS(dir, os.DirFS(filepath.Join(r.Dir, "out"))); err != nil {
			t.Errorf("KEEL_KILL_OUT: %v", err)
		}
	}
	if r.ExitCode == 100 || r.ExitCode == 2 {
		t.Fatalf("scenario setup failed (exit %d):\n%s", r.ExitCode, r.Output)
	}
	judge(t, n, r.File, r.ExitCode)
}

// judge checks the files a loop of n iterations wrote; rc is the
// scenario's exit status (its number of FAIL: lines, also in fails.txt).
func judge(tt *testing.T, n int, file func(string) ([]byte, error), rc int) {
	// Every failure is said again in one summary at the end: a CI excerpt
	// shows the tail of a long log, where the iterations' lines come last.
	t := &tally{T: tt}
	defer t.summary()
	read := func(name string) string {
		b, err := file(name)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	for _, line := range strings.Split(read("fails.txt"), "\n") {
		if line != "" {
			t.Error(line)
		}
	}
	done, err := strconv.Atoi(read("done"))
	if err != nil {
		t.Fatalf("iterations done: %v", err)
	}
	if done < n {
		t.Logf("the loop ran %d of %d iterations (a time budget or deadline stopped it)", done, n)
		n = done
	}
	killed, inStep := map[string]int{}, map[string]int{}
	var logs [][]string // per iteration, every command line keel logged
	for i := 1; i <= n; i++ {
		kind := read(fmt.Sprintf("it%d.kind", i))
		var kr killReport
		if err := json.Unmarshal([]byte(read(fmt.Sprintf("it%d.kill.json", i))), &kr); err != nil {
			t.Fatalf("iteration %d: killer report: %v", i, err)
		}
		if kr.Killed && kr.TriggerSeen {
			killed[kind]++
			if kr.LastCommand == kr.Trigger {
				inStep[kind]++
			}
		} else {
			// An iteration whose keel was not killed tests a plain
			// apply, not the recovery from a kill: every iteration must
			// show its kill landed, whatever the number of iterations.
			t.Errorf("iteration %d (%s): the kill did not land: trigger seen %v, killed %v, keel's exit %d, its last command %s",
				i, kind, kr.TriggerSeen, kr.Killed, kr.Exit, kr.LastCommand)
		}
		t.Logf("it%d %-13s killed=%v group=%v delay=%dms at %dms running=%q last=%s", i, kind, kr.Killed, kr.Group, kr.DelayMS, kr.AfterMS, kr.Running, kr.LastCommand)
		var cmds []string
		for _, f := range []string{"kill.cmds", "apply.cmds"} {
			b, _ := file(fmt.Sprintf("it%d.%s", i, f))
			cmds = append(cmds, strings.Split(strings.TrimSpace(string(b)), "\n")...)
		}
		logs = append(logs, cmds)
		needWork(t, i, kind, cmds)
		applied(t, i, kind, read(fmt.Sprintf("it%d.apply.rc", i)), read(fmt.Sprintf("it%d.apply.txt", i)))
		converged(t, i, read(fmt.Sprintf("it%d.check.rc", i)), read(fmt.Sprintf("it%d.check.json", i)))
		if extra := strays(read(fmt.Sprintf("it%d.lvs-a", i))); len(extra) > 0 {
			t.Logf("iteration %d (%s): LVs neither declared nor made by the scenario (left by an interrupted LVM command): %q", i, kind, extra)
		}
	}
	destructiveOnce(t, n, logs, read)
	var rows []string
	for _, k := range kinds {
		rows = append(rows, fmt.Sprintf("%s %d (%d in the step's command)", k, killed[k], inStep[k]))
		if n >= len(kinds) && killed[k] == 0 && os.Getenv("KEEL_KILL_KINDS") == "" {
			t.Errorf("kind %s: never killed after its trigger", k)
		}
	}
	t.Logf("kills per kind: %s", strings.Join(rows, ", "))
	if rc != 0 {
		t.Errorf("scenario exited %d (its FAIL: lines above)", rc)
	}
}

// guestTimeout bounds the boot: the setup, then about 100 s per iteration
// under TCG, or the time budget (or what is left until the deadline, plus
// the longest wait for the guest lock) and one iteration more.
// The guest's clock is the host's (qemu's RTC), so a deadline holds in both;
// the boot may still wait for the machine's guest lock first.
func guestTimeout(n int, budget time.Duration, deadline time.Time) time.Duration {
	d := time.Duration(n) * 100 * time.Second
	if budget > 0 {
		d = min(d, budget+4*time.Minute)
	}
	if !deadline.IsZero() {
		d = min(d, time.Until(deadline)+lockWait+4*time.Minute)
	}
	return 5*time.Minute + d
}

// lockWait is the longest guest.Run waits for the machine's guest lock.
const lockWait = 30 * time.Minute

// needWork checks that iteration i gave keel work of every kind: the
// commands of both runs together hold each step the scenario set up.
func needWork(t testing.TB, i int, kind string, cmds []string) {
	t.Helper()
	want := [][]string{
		{`"lvmconfig","--validate"`},
		{`"udevadm","control","--reload"`},
		{`"lvcreate"`, `thin-pool`, `"tchurn"`},
		{`"pvmove"`, `vsplit_vdata`},
		{`"lvremove"`, fmt.Sprintf("kvg/del-gone-%d", i)},
	}
	switch kind {
	case "vdo-lvcreate":
		want = append(want, []string{`"lvcreate"`, `"--type","vdo"`, "vchurn"})
	case "vdo-split", "vdo-lvconvert", "vdo-partial":
		want = append(want, []string{`"lvconvert"`, "vdo-pool", "kvg/vchurn"})
	}
	for _, w := range want {
		found := false
		for _, c := range cmds {
			if containsAll(c, w) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("iteration %d (%s): no command with %q in keel's logs: the iteration did not need that work, or keel did not do it", i, kind, w)
		}
	}
}

// applied checks the keel apply after the kill: exit 0, or 1 (findings at
// warning or above remain) with no action stuck, refused or failed; which
// findings remain is for converged to judge (the reused name's warning).
func applied(t testing.TB, i int, kind, rc, out string) {
	t.Helper()
	bad := rc != "0" && rc != "1"
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && (f[0] == "stuck" || f[0] == "refused" || f[0] == "failed") {
			bad = true
		}
	}
	if bad {
		t.Errorf("iteration %d (%s): keel apply after the kill exited %s:\n%s", i, kind, rc, out)
	}
}

// converged checks keel check after the recovery: exit 0, or 1 with only
// the warning a reused absent name raises.
func converged(t testing.TB, i int, rc, js string) {
	t.Helper()
	var rep checkReport
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Errorf("iteration %d: keel check report: %v\n%s", i, err, js)
		return
	}
	var bad []string
	for _, f := range rep.Findings {
		if f.Severity == "info" {
			continue
		}
		if f.ID == "lv.absent_reappeared" && f.Object == fmt.Sprintf("kvg/gone-%d", i-1) {
			continue
		}
		bad = append(bad, f.ID+"@"+f.Object+" ("+f.Severity+")")
	}
	if len(bad) > 0 || (rc != "0" && rc != "1") || (rc == "1" && i == 1) {
		t.Errorf("iteration %d: keel check exit %s, findings above info that converging leaves none of: %q", i, rc, bad)
	}
}

// destructiveOnce checks that no destructive command ever named an LV keel
// already removed (the reused names hold new LVs with data), and that keel's
// state binds each absent name to exactly the one LV it removed.
func destructiveOnce(t testing.TB, n int, logs [][]string, read func(string) string) {
	t.Helper()
	removals := 0
	for j := 1; j <= n; j++ {
		name := fmt.Sprintf("gone-%d", j)
		for i := j + 1; i <= n; i++ {
			for _, c := range logs[i-1] {
				if destructive(c) && (strings.Contains(c, `"`+name+`"`) || strings.Contains(c, "kvg/"+name+`"`) || strings.Contains(c, "del-"+name+`"`)) {
					t.Errorf("iteration %d ran a destructive command on %s, which iteration %d removed (the name now holds another LV): %s", i, name, j, c)
				}
			}
		}
		for _, c := range logs[j-1] {
			if strings.Contains(c, `"lvremove"`) && strings.Contains(c, "del-"+name+`"`) {
				removals++
			}
		}
		uuids := map[string]string{}
		for _, l := range strings.Split(read(fmt.Sprintf("it%d.uuids", j)), "\n") {
			if f := strings.Fields(l); len(f) == 2 {
				uuids[f[0]] = f[1]
			}
		}
		var st stateFile
		if err := json.Unmarshal([]byte(read(fmt.Sprintf("it%d.state.json", j))), &st); err != nil {
			t.Errorf("iteration %d: keel's state file: %v", j, err)
			continue
		}
		b := st.Absent["kvg/"+name].Bound
		if len(b) != 1 || b[0].UUID != uuids[name] || b[0].Removed.IsZero() {
			t.Errorf("iteration %d: keel's state binds %s to %+v, want exactly the LV %s, removed", j, name, b, uuids[name])
		}
		if j > 1 {
			prev := fmt.Sprintf("gone-%d", j-1)
			for _, x := range st.Absent["kvg/"+prev].Bound {
				if x.UUID == uuids[prev] {
					t.Errorf("iteration %d: keel bound the reused name %s's new LV %s for removal", j, prev, x.UUID)
				}
			}
		}
	}
	t.Logf("destructive once: %d lvremove commands for %d absent LVs", removals, n)
}

// destructive reports whether a command log line changes or removes an LV
// in a way a removal does (tag, rename, remove).
func destructive(line string) bool {
	var argv []string
	if json.Unmarshal([]byte(line), &argv) != nil || len(argv) == 0 {
		return false
	}
	switch argv[0] {
	case "lvremove", "lvrename":
		return true
	case "lvchange":
		return strings.Contains(line, `"--addtag"`)
	}
	return false
}

// ownLV matches the LVs of kvg that the desired state or the scenario makes.
var ownLV = regexp.MustCompile(`^\[?(vsplit|vsplitlv|vchurn|vchurnlv|tkeep|tchurn|tdata|other|gone-[0-9]+|lvol0_pmspare)(_vdata|_tdata|_tmeta)?\]?$`)

// strays lists the LV names of an lvs -a listing that ownLV does not match.
func strays(lvs string) []string {
	var out []string
	for _, l := range strings.Split(lvs, "\n") {
		if f := strings.Fields(l); len(f) > 0 && !ownLV.MatchString(f[0]) {
			out = append(out, f[0])
		}
	}
	return out
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// tally is a *testing.T that keeps every failure message, for judge's
// summary.
type tally struct {
	*testing.T
	msgs []string
}

// Errorf reports a failure and keeps its message.
func (t *tally) Errorf(format string, args ...any) {
	t.Helper()
	t.msgs = append(t.msgs, fmt.Sprintf(format, args...))
	t.T.Errorf(format, args...)
}

// Error reports a failure and keeps its message.
func (t *tally) Error(args ...any) {
	t.Helper()
	t.msgs = append(t.msgs, fmt.Sprint(args...))
	t.T.Error(args...)
}

// summary logs every failure kept, one line each (the first line of a long
// message), after the iterations' lines.
func (t *tally) summary() {
	if len(t.msgs) == 0 {
		return
	}
	var b strings.Builder
	for _, m := range t.msgs {
		first, _, _ := strings.Cut(m, "\n")
		fmt.Fprintf(&b, "\n  - %s", first)
	}
	t.T.Logf("summary: %d failures:%s", len(t.msgs), b.String())
}
