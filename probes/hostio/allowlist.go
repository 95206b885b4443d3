package hostio

import (
	"context"
	"fmt"
	"path"
	"strings"
)

// RefusedError is a safety refusal: the action was not run and will not be
// forced. The planner or the caller turns it into a finding.
type RefusedError struct {
	Reason string
}

func (e *RefusedError) Error() string { return e.Reason }

// allowed lists the programs an action may run. Anything else is refused:
// actions are argv lists built by the planner, and this stops a bug (or a
// hostile configuration) from turning one into something else.
var allowed = map[string]bool{
	"lvm": true, "lvcreate": true, "lvchange": true, "lvconvert": true, "lvextend": true,
	"lvresize": true, "lvremove": true, "lvrename": true, "pvcreate": true, "pvmove": true,
	"pvchange": true, "vgcreate": true, "vgchange": true, "vgextend": true, "vgreduce": true,
	"pvresize": true, "dmsetup": true, "blkdiscard": true, "udevadm": true, "make-bcache": true, "pvscan": true,
}

// Allowlisted is a Runner that refuses, with a *RefusedError, any
// command ValidateArgv refuses, and runs the others through Runner. It is
// the runner keel hands to the parts of an action that run commands
// themselves (the safe removal's lvchange, lvrename and lvremove), so that
// every mutating command passes the same allowlist as the planner's.
type Allowlisted struct {
	Runner Runner
}

// Run validates c and runs it.
func (a Allowlisted) Run(ctx context.Context, c Cmd) (Result, error) {
	if err := ValidateArgv(c.Argv()); err != nil {
		return Result{ExitCode: -1}, &RefusedError{Reason: err.Error()}
	}
	return a.Runner.Run(ctx, c)
}

// ValidateArgv checks that argv names a known program (a bare name or an
// absolute path to one) and that no argument contains a NUL or newline.
func ValidateArgv(argv []string) error {
	if len(argv) == 0 {
		return fmt.Errorf("empty command")
	}
	name := argv[0]
	if strings.ContainsRune(name, '/') {
		if !path.IsAbs(name) || path.Clean(name) != name {
			return fmt.Errorf("command %q: not a bare name or a clean absolute path", name)
		}
		name = path.Base(name)
	}
	if !allowed[name] {
		return fmt.Errorf("command %q is not one keel runs", argv[0])
	}
	for _, a := range argv[1:] {
		if strings.ContainsAny(a, "\x00\n") {
			return fmt.Errorf("command %s: argument %q contains a NUL or newline", argv[0], a)
		}
	}
	return nil
}
