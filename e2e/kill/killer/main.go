// Command killer runs a command (keel apply) in its own process group and
// SIGKILLs it at a chosen moment: once a line containing every -match
// substring appears in a file the command appends to (keel's --command-log,
// one JSON argv per line), after a random delay below -delay-max, or, with
// -when-exists, as soon as that path exists (and -unless-exists does not):
// a state a command passes through too briefly for a random delay to hit
// often. It runs
// inside the test guest for e2e/kill and writes what happened as JSON to -out:
// whether the trigger was seen, the delay, whether the command was still
// running when killed, and the command lines of its descendants at that
// moment (the LVM command keel was waiting for).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// report is what killer writes to -out.
type report struct {
	Match       []string `json:"match"`
	TriggerSeen bool     `json:"trigger_seen"`
	Trigger     string   `json:"trigger,omitempty"`
	DelayMS     int64    `json:"delay_ms"`
	Group       bool     `json:"group"`
	Killed      bool     `json:"killed"`
	AfterMS     int64    `json:"after_ms"`
	Running     []string `json:"running,omitempty"`
	LastCommand string   `json:"last_command,omitempty"`
	Exit        int      `json:"exit"`
}

func main() {
	logPath := flag.String("log", "", "`FILE` the command appends lines to (keel's --command-log)")
	match := flag.String("match", "", "comma-separated substrings a line of -log must all contain")
	delayMax := flag.Duration("delay-max", 0, "kill after a random delay in [0, `D`) once the line appears")
	group := flag.Bool("group", false, "kill the whole process group (keel and the LVM command it runs), as systemd kills a unit's cgroup")
	seed := flag.Int64("seed", 1, "random seed of the delay")
	out := flag.String("out", "", "write the report as JSON to `FILE`")
	limit := flag.Duration("timeout", 15*time.Minute, "kill the command after `D` whatever happens")
	whenExists := flag.String("when-exists", "", "once the line appears, kill as soon as `PATH` exists (instead of the delay)")
	unlessExists := flag.String("unless-exists", "", "with -when-exists: and `PATH` does not")
	flag.Parse()
	if flag.NArg() == 0 || *logPath == "" || *match == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: killer -log FILE -match S1,S2 -delay-max D -out FILE [-group] [-seed N] -- COMMAND...")
		os.Exit(2)
	}
	rep := report{Match: strings.Split(*match, ","), Group: *group}
	rng := rand.New(rand.NewSource(*seed))
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "killer:", err)
		os.Exit(2)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var deadline <-chan time.Time
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	giveUp := time.After(*limit)
	var offset int64
	var seen time.Time
	var waitErr error
	exited := false
loop:
	for {
		select {
		case waitErr = <-done:
			exited = true
			break loop
		case <-giveUp:
			fmt.Fprintln(os.Stderr, "killer: timeout, killing")
			break loop
		case <-deadline:
			break loop
		case <-tick.C:
			if rep.TriggerSeen {
				if *whenExists != "" && exists(*whenExists) && (*unlessExists == "" || !exists(*unlessExists)) {
					rep.DelayMS = time.Since(seen).Milliseconds()
					break loop
				}
				continue
			}
			for _, l := range newLines(*logPath, &offset) {
				if containsAll(l, rep.Match) {
					rep.TriggerSeen, rep.Trigger = true, l
					seen = time.Now()
					if *whenExists != "" {
						break
					}
					d := time.Duration(0)
					if *delayMax > 0 {
						d = time.Duration(rng.Int63n(int64(*delayMax)))
					}
					rep.DelayMS = d.Milliseconds()
					deadline = time.After(d)
					break
				}
			}
		}
	}
	if !exited {
		target := cmd.Process.Pid
		if *group {
			target = -cmd.Process.Pid
		}
		rep.AfterMS = time.Since(start).Milliseconds()
		// Stopped first, at the chosen moment, and listed while stopped:
		// walking /proc takes tens of milliseconds under TCG, long enough
		// for lvm2 to pass the state the kill was aimed at.
		_ = syscall.Kill(target, syscall.SIGSTOP)
		rep.Running = descendants(cmd.Process.Pid)
		if err := syscall.Kill(target, syscall.SIGKILL); err == nil {
			rep.Killed = true
		}
		waitErr = <-done
	}
	rep.Exit = exitCode(waitErr)
	if b, err := os.ReadFile(*logPath); err == nil {
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		rep.LastCommand = lines[len(lines)-1]
	}
	b, _ := json.Marshal(rep) // plain data: cannot fail
	if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "killer:", err)
		os.Exit(2)
	}
	fmt.Printf("killer: %s\n", b)
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// newLines returns the whole lines appended to path since *offset.
func newLines(path string, offset *int64) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(*offset, 0); err != nil {
		return nil
	}
	var out []string
	r := bufio.NewReader(f)
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			return out // a partial line is read again next time
		}
		*offset += int64(len(l))
		out = append(out, strings.TrimSpace(l))
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// descendants lists "pid: cmdline" of every live descendant of pid.
func descendants(pid int) []string {
	children := map[int][]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut after ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		p, _ := strconv.Atoi(filepath.Base(filepath.Dir(st)))
		children[ppid] = append(children[ppid], p)
	}
	var out []string
	queue := append([]int(nil), children[pid]...)
	for len(queue) > 0 {
		p := queue[0]
		queue = append(queue[1:], children[p]...)
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		if err != nil {
			continue
		}
		out = append(out, fmt.Sprintf("%d: %s", p, strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))))
	}
	return out
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}
