package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets testscript run the keel binary in-process: scripts call
// `keel ...` and get Main with the real exit code.
func TestMain(m *testing.M) {
	// Tests that call the subcommands directly leave the host's
	// /run/keel alone; scripts set their own cache directory (TestScripts).
	if os.Getenv("KEEL_CACHE_DIR") == "" {
		os.Setenv("KEEL_CACHE_DIR", "off")
	}
	testscript.Main(m, map[string]func(){
		"keel": func() { os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// updateScripts rewrites the scripts' cmp files from what keel prints now
// (go test ./cmd/keel -run TestScripts -update); review the diff.
var updateScripts = flag.Bool("update", false, "rewrite the testdata/script files' expected output")

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
		UpdateScripts:       *updateScripts,
		Setup: func(env *testscript.Env) error {
			env.Setenv("EXAMPLES", examples)
			// Every script exercises the desired-state cache, in its own
			// directory, never the host's /run/keel.
			env.Setenv("KEEL_CACHE_DIR", filepath.Join(env.WorkDir, ".keel-cache"))
			return nil
		},
	})
}
