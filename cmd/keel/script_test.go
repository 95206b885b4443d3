package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/keel-storage/keel/internal/testenv"
	"github.com/keel-storage/keel/schema"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets testscript run the keel binary in-process: scripts call
// `keel ...` and get Main with the real exit code.
func TestMain(m *testing.M) {
	// Tests that call the subcommands directly leave the host's
	// /run/keel and /var/lib/keel alone; scripts set their own cache and
	// state directories (TestScripts).
	if os.Getenv("KEEL_CACHE_DIR") == "" {
		os.Setenv("KEEL_CACHE_DIR", "off")
	}
	run := testscript.TestingM(m)
	if os.Getenv("KEEL_STATE_DIR") == "" {
		dir, err := os.MkdirTemp("", "keel-state-")
		if err != nil {
			panic(err)
		}
		os.Setenv("KEEL_STATE_DIR", dir)
		run = removeAfter{m, dir}
	}
	testscript.Main(run, map[string]func(){
		"keel": func() {
			// KEEL_TEST_EUID runs keel as that user as far as its root
			// check goes (requireRoot), whoever runs the tests.
			if v := os.Getenv("KEEL_TEST_EUID"); v != "" {
				euid, err := strconv.Atoi(v)
				if err != nil {
					panic("KEEL_TEST_EUID: " + err.Error())
				}
				geteuid = func() int { return euid }
			}
			os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
		},
	})
}

// removeAfter runs the tests, then removes dir.
type removeAfter struct {
	m   *testing.M
	dir string
}

func (r removeAfter) Run() int {
	defer os.RemoveAll(r.dir)
	return r.m.Run()
}

// TestScripts runs every testdata/script/*.txtar. Each command adds its own
// scripts as <command>_*.txtar. $EXAMPLES is the repository's examples
// directory.
func TestScripts(t *testing.T) {
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       testenv.Update(), // go test ./cmd/keel -run TestScripts -update; review the diff
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"exits": exitsCmd,
		},
		Condition: func(cond string) (bool, error) {
			if cond != "etckeel" {
				return false, fmt.Errorf("unknown condition %q", cond)
			}
			_, err := os.Stat(schema.DefaultPath)
			return err == nil, nil
		},
		Setup: func(env *testscript.Env) error {
			env.Setenv("EXAMPLES", examples)
			// Every script exercises the desired-state cache, in its own
			// directory, never the host's /run/keel.
			env.Setenv("KEEL_CACHE_DIR", filepath.Join(env.WorkDir, ".keel-cache"))
			// and keel's state (what live runs record) in its own.
			env.Setenv("KEEL_STATE_DIR", filepath.Join(env.WorkDir, ".keel-state"))
			// $KEELBIN is the directory that holds only the keel command:
			// PATH=$KEELBIN runs keel on a host without lvm.
			for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
				if _, err := os.Stat(filepath.Join(dir, "keel")); err == nil {
					env.Setenv("KEELBIN", dir)
					break
				}
			}
			return nil
		},
	})
}

// exitsCmd is the script command `exits CODE PROG [ARGS...]`: it runs PROG
// as exec does (stdout and stderr kept for the next commands) and fails
// unless PROG exits with CODE. It holds keel's exit-code contract
// (docs/cli.md), which `exec` and `! exec` cannot tell apart.
func exitsCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE command [args...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ec interface{ ExitCode() int }
		if !errors.As(err, &ec) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ec.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}
