//go:build e2e

package guest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ShareFiles reads the files at paths (relative to the test's package
// directory) for a guest's share, each under its base name.
func ShareFiles(t testing.TB, paths ...string) map[string][]byte {
	t.Helper()
	files := make(map[string][]byte, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(p)] = b
	}
	return files
}

// LogVerdicts logs the guest's wall time and each "ok:" and "FAIL:" line
// of a scenario that follows the ok:/FAIL: convention, and each line that
// starts with one of also.
func (r *Result) LogVerdicts(t testing.TB, also ...string) {
	t.Helper()
	t.Logf("guest wall time %s", r.Wall)
	for _, line := range strings.Split(r.Output, "\n") {
		if strings.HasPrefix(line, "ok: ") || strings.HasPrefix(line, "FAIL: ") ||
			slices.ContainsFunc(also, func(p string) bool { return strings.HasPrefix(line, p) }) {
			t.Log(line)
		}
	}
}

// RequireLines fails the test unless the scenario exited 0 and printed
// each of want. Such a scenario exits with its number of failures and
// prints an "ok:" line for each step that must pass, so one that stopped
// early cannot pass.
func (r *Result) RequireLines(t testing.TB, want ...string) {
	t.Helper()
	r.RequireOK(t)
	for _, w := range want {
		if !strings.Contains(r.Output, w) {
			t.Errorf("scenario output lacks %q", w)
		}
	}
}

// KeepCaptures copies the files sub/<name> a scenario left in its output
// into the directory the environment variable env names, when it is set:
// how the host tests' fixtures are recorded again. Nothing happens
// without it.
func (r *Result) KeepCaptures(t testing.TB, env, sub string, names ...string) {
	t.Helper()
	dir := os.Getenv(env)
	if dir == "" {
		return
	}
	for _, name := range names {
		b, err := r.File(sub + "/" + name)
		if err != nil {
			t.Error(err)
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
