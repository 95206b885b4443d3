package hostio

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestValidateArgv(t *testing.T) {
	for _, argv := range [][]string{{"sh", "-c", "rm -rf /"}, {"./lvcreate"}, {"/sbin/../bin/sh"}, {"lvcreate", "a\nb"}, {}} {
		if ValidateArgv(argv) == nil {
			t.Errorf("ValidateArgv(%q) accepted", argv)
		}
	}
	// An absolute path must be clean, even when its last element is a
	// program keel runs: "/sbin/../tmp/lvcreate" is /tmp/lvcreate.
	for _, name := range []string{"/sbin/../tmp/lvcreate", "/usr/sbin/./lvremove", "/usr/sbin//pvmove", "/usr/sbin/lvcreate/"} {
		err := ValidateArgv([]string{name})
		if err == nil || !strings.Contains(err.Error(), "not a bare name or a clean absolute path") {
			t.Errorf("ValidateArgv(%q): %v, want refused as unclean", name, err)
		}
	}
	for _, argv := range [][]string{{"/usr/sbin/lvcreate", "-n", "x"}, {"vgcreate", "vg0", "/dev/disk/by-id/x"}} {
		if err := ValidateArgv(argv); err != nil {
			t.Errorf("ValidateArgv(%q): %v", argv, err)
		}
	}
}

// ranRunner records the commands it runs and answers each with exit 0.
type ranRunner struct{ ran []string }

func (r *ranRunner) Run(_ context.Context, c Cmd) (Result, error) {
	r.ran = append(r.ran, c.String())
	return Result{}, nil
}

// Allowlisted refuses what ValidateArgv refuses, before anything runs.
func TestAllowlistedRunner(t *testing.T) {
	r := &ranRunner{}
	al := Allowlisted{Runner: r}
	_, err := al.Run(context.Background(), Cmd{Name: "rm", Args: []string{"-rf", "/"}})
	var refused *RefusedError
	if !errors.As(err, &refused) || len(r.ran) != 0 {
		t.Fatalf("rm: err %v, ran %v", err, r.ran)
	}
	if _, err := al.Run(context.Background(), Cmd{Name: "lvremove", Args: []string{"--yes", "vg/del-x"}}); err != nil || len(r.ran) != 1 {
		t.Fatalf("lvremove: err %v, ran %v", err, r.ran)
	}
}
