// Command keel is a declarative, reconciling node agent for the block-storage
// stack of Linux hypervisors: LVM-VDO pools, dm-thin pools, bcache and lvm.conf.
//
// Each subcommand lives in its own file; the table in cli.go lists them
// all, and main only dispatches.
package main

import (
	"os"
	"runtime/debug"
	"time"
)

// mainStart is when main started (KEEL_TIMING's origin, check.go).
var mainStart time.Time

func main() {
	mainStart = time.Now()
	phases = newPhaseLog(os.Getenv(envTiming) != "")
	if p, ok := oneShotGC(os.Args[1:], os.Getenv); ok {
		debug.SetGCPercent(p.percent)
		if p.limit > 0 {
			debug.SetMemoryLimit(p.limit)
		}
	}
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}

// gcPolicy is a garbage collector setting.
type gcPolicy struct {
	percent int   // debug.SetGCPercent; -1 is off
	limit   int64 // debug.SetMemoryLimit in bytes; 0 leaves it alone
}

// oneShotMemoryLimit is the soft memory limit of a one-shot command with the
// collector off: far above what a check of a real host allocates (a few MiB;
// the collector starts at 4 MiB), reached only on hosts with tens of
// thousands of LVs, where the collector then runs as usual.
const oneShotMemoryLimit = 256 << 20

// oneShotGC returns the collector setting for a command line: every command
// but the daemon (keel run) lives for about a second and allocates a few
// MiB, and under load collecting them delays keel check after lvm
// fullreport's output came in (docs/benchmark-history.md). It turns the
// collector off up to oneShotMemoryLimit. GOGC or GOMEMLIMIT in the
// environment win, as the runtime already applied them.
func oneShotGC(args []string, getenv func(string) string) (gcPolicy, bool) {
	if len(args) == 0 || args[0] == "run" || getenv("GOGC") != "" {
		return gcPolicy{}, false
	}
	p := gcPolicy{percent: -1}
	if getenv("GOMEMLIMIT") == "" {
		p.limit = oneShotMemoryLimit
	}
	return p, true
}
