// Package testenv is what keel's tests share about the place they run in:
// whether a test that needs root may run, whether golden files are checked
// or rewritten, and the umask. Only tests import it.
//
// Importing it sets the umask to 022, root's: keel refuses a desired state
// its group or others can write, so a test's files must not take the group
// write bit from a user's umask of 002 (user private groups).
//
// Every test binary of the module imports it (TestEveryTestImportsTestenv)
// so that each accepts the one -update flag and `go test ./... -update`
// rewrites every golden file; a binary without the flag would fail with
// "flag provided but not defined".
package testenv

import (
	"flag"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func init() { syscall.Umask(0o022) }

var update = flag.Bool("update", false, "rewrite every golden file (and testscript output) from what the code produces now")

// Update reports whether the test run was asked to rewrite its golden files
// (go test -update) instead of comparing against them.
func Update() bool { return *update }

// RootTestsVar is the environment variable that makes a test needing root
// fail instead of skipping when the tests do not run as root; CI sets it to
// RootTestsRequired (make test with CI set), so that a CI run that lost
// root cannot pass by skipping.
const RootTestsVar = "KEEL_ROOT_TESTS"

// RootTestsRequired is the value of RootTestsVar that requires root.
const RootTestsRequired = "require"

// NeedRoot skips t unless the tests run as root, or fails it when
// RootTestsVar asks for root tests; why names what needs root (loop
// devices, a uevent file), for the message.
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	needRoot(t, why, os.Geteuid(), os.Getenv(RootTestsVar))
}

func needRoot(t testing.TB, why string, euid int, mode string) {
	t.Helper()
	if euid == 0 {
		return
	}
	if mode == RootTestsRequired {
		t.Fatalf("needs root (%s), and %s=%s requires root tests to run; effective uid %d", why, RootTestsVar, mode, euid)
		return
	}
	t.Skipf("needs root (%s); effective uid %d (%s=%s makes this a failure)", why, euid, RootTestsVar, RootTestsRequired)
}

// ToolsVar is the environment variable that makes a test needing an outside
// program (the cue CLI, Prometheus's promtool) fail instead of skipping when
// the program is missing. `make check` sets it to ToolsRequired (and `make
// test` does when CI is set), so a run of the README's test command cannot
// pass by skipping those checks; a plain go test skips them, saying so.
const ToolsVar = "KEEL_REQUIRE_TOOLS"

// ToolsRequired is the value of ToolsVar that requires the tools.
const ToolsRequired = "1"

// NeedTool returns the path of the program name, looked up on PATH and then
// in dirs. When it is not found, it skips t, or fails it when ToolsVar asks
// for the tools; install says how to get it, for the message.
func NeedTool(t testing.TB, name, install string, dirs ...string) string {
	t.Helper()
	// PATH searched by hand: only probes/hostio imports os/exec (TestLayers).
	return needTool(t, name, install, os.Getenv(ToolsVar), func() (string, bool) {
		for _, d := range append(filepath.SplitList(os.Getenv("PATH")), dirs...) {
			p := filepath.Join(d, name)
			if st, err := os.Stat(p); err == nil && filepath.IsAbs(p) && !st.IsDir() && st.Mode()&0o111 != 0 {
				return p, true
			}
		}
		return "", false
	})
}

func needTool(t testing.TB, name, install, mode string, find func() (string, bool)) string {
	t.Helper()
	if p, ok := find(); ok {
		return p
	}
	if mode == ToolsRequired {
		t.Fatalf("%s not found, and %s=%s requires it (make check sets it): %s", name, ToolsVar, mode, install)
		return ""
	}
	t.Skipf("%s not found: SKIPPING the checks that need it (%s=%s makes this a failure); install it: %s", name, ToolsVar, ToolsRequired, install)
	return ""
}
