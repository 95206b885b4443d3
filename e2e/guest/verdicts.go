//go:build e2e

package guest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Verdicts reads a scenario's PASS: and FAIL: lines (the convention of
// the scenario scripts): it logs each PASS line and every line that starts
// with one of logged, fails the test with each FAIL line, and returns the
// number of PASS lines. The FAIL lines are logged once more when the test
// ends, after its subtests: a CI log that keeps only a test's last lines
// (the stop's CI report does) then still says which check failed.
func (r *Result) Verdicts(t testing.TB, logged ...string) int {
	t.Helper()
	passes := 0
	var failed []string
	for _, line := range strings.Split(r.Output, "\n") {
		switch {
		case strings.HasPrefix(line, "PASS: "):
			passes++
			t.Log(line)
		case strings.HasPrefix(line, "FAIL: "):
			t.Error(line)
			failed = append(failed, line)
		default:
			for _, p := range logged {
				if strings.HasPrefix(line, p) {
					t.Log(line)
					break
				}
			}
		}
	}
	if len(failed) > 0 {
		t.Cleanup(func() {
			t.Logf("the scenario's %d FAIL line(s), again:\n%s", len(failed), strings.Join(failed, "\n"))
		})
	}
	return passes
}

// Tail returns the last n lines of the scenario's output.
func (r *Result) Tail(n int) string { return tail(r.Output, n) }

// RepoFile returns a file of the repository (rel with slashes), failing
// the test when it cannot be read.
func RepoFile(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(RepoRoot(t), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("test input: %v", err)
	}
	return b
}
