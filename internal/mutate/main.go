// Command mutate checks that keel's tests guard its safety rules: it applies
// each one-line mutation of the list in mutations.go to a scratch copy of the
// tree, runs the tests that guard the rule, and fails when the tests still
// pass (the mutation survived) or when a mutation's old text is no longer in
// its file exactly once (the list went stale). The working tree is never
// written; the scratch copy is removed on every exit, an interrupt included.
//
//	go run ./internal/mutate            # every mutation (make mutate)
//	go run ./internal/mutate -run alias # those whose rule matches a regexp
//	go run ./internal/mutate -list      # the list as docs/testing.md shows it
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mutate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	only := fs.String("run", "", "apply only the mutations whose rule matches this regexp")
	list := fs.Bool("list", false, "print the list of mutations as a Markdown table and exit")
	timeout := fs.Duration("timeout", 5*time.Minute, "go test's -timeout for one mutation")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *list {
		fmt.Fprint(stdout, table(mutations))
		return 0
	}
	chosen := mutations
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			fmt.Fprintf(stderr, "mutate: -run: %v\n", err)
			return 2
		}
		chosen = nil
		for _, m := range mutations {
			if re.MatchString(m.Rule) {
				chosen = append(chosen, m)
			}
		}
	}
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintf(stderr, "mutate: %v\n", err)
		return 2
	}
	// The list is checked against the working tree before any copy: a
	// stale entry fails the run at once.
	if errs := checkList(root, chosen); len(errs) > 0 {
		for _, e := range errs {
			fmt.Fprintf(stderr, "mutate: %v\n", e)
		}
		fmt.Fprintln(stderr, "mutate: the list is stale: update internal/mutate/mutations.go (and docs/testing.md: go run ./internal/mutate -list)")
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	scratch, err := os.MkdirTemp("", "keel-mutate-")
	if err != nil {
		fmt.Fprintf(stderr, "mutate: %v\n", err)
		return 2
	}
	defer os.RemoveAll(scratch)
	if err := copyTree(root, scratch); err != nil {
		fmt.Fprintf(stderr, "mutate: copy the tree: %v\n", err)
		return 2
	}
	start := time.Now()
	// The guarding tests must pass on the tree as it is: a test that
	// fails anyway would seem to kill every mutation.
	if out, err := goTest(ctx, scratch, *timeout, baseline(chosen)); ctx.Err() != nil {
		fmt.Fprintln(stderr, "mutate: interrupted; the scratch copy is removed")
		return 1
	} else if err != nil {
		fmt.Fprintf(stderr, "mutate: the guarding tests fail without any mutation: %v\n%s\n", err, indent(out))
		return 1
	}
	fmt.Fprintf(stdout, "mutate: the guarding tests pass unmutated (%.1fs)\n", time.Since(start).Seconds())
	var survived, broken []string
	for i, m := range chosen {
		t0 := time.Now()
		res, out, err := try(ctx, scratch, m, *timeout)
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "mutate: interrupted; the scratch copy is removed")
			return 1
		}
		if err != nil {
			fmt.Fprintf(stderr, "mutate: %s: %v\n", m.Rule, err)
			return 2
		}
		fmt.Fprintf(stdout, "%2d/%d %-9s %s (%s:%s) in %.1fs\n", i+1, len(chosen), res, m.Rule, m.File, m.Run, time.Since(t0).Seconds())
		switch res {
		case resSurvived:
			survived = append(survived, m.Rule)
			fmt.Fprintf(stdout, "      %s: %q -> %q passes go test -run '%s' %s\n", m.File, m.Old, m.New, m.Run, strings.Join(m.Pkgs, " "))
		case resKilled:
			fmt.Fprintf(stdout, "      failed: %s\n", strings.Join(failedTests(out), " "))
		case resUnbuilt:
			broken = append(broken, m.Rule)
			fmt.Fprintf(stdout, "%s\n", indent(out))
		}
	}
	fmt.Fprintf(stdout, "mutate: %d mutations in %.0fs: %d survived, %d do not build\n",
		len(chosen), time.Since(start).Seconds(), len(survived), len(broken))
	if len(survived) > 0 || len(broken) > 0 {
		for _, r := range survived {
			fmt.Fprintf(stderr, "mutate: SURVIVED: %s: no test fails on it; write one that does\n", r)
		}
		for _, r := range broken {
			fmt.Fprintf(stderr, "mutate: DOES NOT BUILD: %s: a mutation must compile to test the tests\n", r)
		}
		return 1
	}
	return 0
}

// result is what one mutation did to its tests.
type result string

const (
	resKilled   result = "killed"
	resSurvived result = "SURVIVED"
	resUnbuilt  result = "NO BUILD"
)

// try applies m in the scratch tree, runs its tests and puts the file back.
func try(ctx context.Context, scratch string, m Mutation, timeout time.Duration) (result, string, error) {
	path := filepath.Join(scratch, m.File)
	orig, err := os.ReadFile(path)
	if err != nil {
		return "", "", err
	}
	mutated, err := apply(orig, m)
	if err != nil {
		return "", "", err
	}
	if err := os.WriteFile(path, mutated, 0o644); err != nil {
		return "", "", err
	}
	defer os.WriteFile(path, orig, 0o644)
	out, err := goTest(ctx, scratch, timeout, m)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return resSurvived, out, nil
	case !errors.As(err, &exit):
		return "", out, fmt.Errorf("go test: %w", err)
	case strings.Contains(out, "[build failed]") || strings.Contains(out, "[setup failed]"):
		return resUnbuilt, out, nil
	}
	return resKilled, out, nil
}

// goTest runs m's tests in dir and returns their output. -trimpath keeps
// the scratch directory's name out of the build cache's keys, so a second
// run reuses the first one's builds.
func goTest(ctx context.Context, dir string, timeout time.Duration, m Mutation) (string, error) {
	args := append([]string{"test", "-count=1", "-trimpath", "-timeout", timeout.String(), "-run", m.Run}, m.Pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// baseline is one go test run of every guarding test of ms, unmutated.
func baseline(ms []Mutation) Mutation {
	var b Mutation
	var runs []string
	for _, m := range ms {
		for _, p := range m.Pkgs {
			if !slices.Contains(b.Pkgs, p) {
				b.Pkgs = append(b.Pkgs, p)
			}
		}
		if !slices.Contains(runs, m.Run) {
			runs = append(runs, m.Run)
		}
	}
	b.Run = strings.Join(runs, "|")
	return b
}

// apply replaces m.Old, which must occur exactly once, by m.New.
func apply(src []byte, m Mutation) ([]byte, error) {
	if n := bytes.Count(src, []byte(m.Old)); n != 1 {
		return nil, fmt.Errorf("%s: old text %q found %d times, want exactly once", m.File, m.Old, n)
	}
	if m.Old == m.New {
		return nil, fmt.Errorf("%s: old and new text are the same", m.File)
	}
	return bytes.Replace(src, []byte(m.Old), []byte(m.New), 1), nil
}

// checkList applies every mutation to its file in memory.
func checkList(root string, ms []Mutation) []error {
	var errs []error
	for _, m := range ms {
		src, err := os.ReadFile(filepath.Join(root, m.File))
		if err == nil {
			_, err = apply(src, m)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.Rule, err))
		}
	}
	return errs
}

// moduleRoot is the directory of the main module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside keel's module")
	}
	return filepath.Dir(mod), nil
}

// copyTree copies the files git knows of, tracked or not ignored, as the
// working tree has them (uncommitted changes included).
func copyTree(root, dst string) error {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	for _, name := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, name)
		st, err := os.Lstat(src)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree, not yet in the index
		}
		if err != nil {
			return err
		}
		to := filepath.Join(dst, name)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if st.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(src)
			if err == nil {
				err = os.Symlink(target, to)
			}
			if err != nil {
				return err
			}
			continue
		}
		b, err := os.ReadFile(src)
		if err == nil {
			err = os.WriteFile(to, b, st.Mode().Perm())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// table lists the mutations as docs/testing.md shows them.
func table(ms []Mutation) string {
	var b strings.Builder
	b.WriteString("| rule | file | mutation | killed by |\n|---|---|---|---|\n")
	for _, m := range ms {
		fmt.Fprintf(&b, "| %s | `%s` | `%s` → `%s` | `%s` (%s) |\n", m.Rule, m.File, cell(m.Old), cell(m.New), cell(m.Run), strings.Join(m.Pkgs, " "))
	}
	return b.String()
}

// cell shows the changed line of a mutation's text in a table cell: its
// last line, where a one-line mutation's change is, without the indent and
// with | escaped (GitHub's tables split a code span on it otherwise).
func cell(s string) string {
	s = strings.TrimSuffix(s, "\n")
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		s = s[i+1:]
	}
	return strings.ReplaceAll(strings.TrimSpace(s), "|", `\|`)
}

var failLine = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)

// failedTests lists the tests go test's output says failed.
func failedTests(out string) []string {
	var names []string
	for _, m := range failLine.FindAllStringSubmatch(out, -1) {
		names = append(names, m[1])
	}
	return names
}

func indent(s string) string {
	return "      " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n      ")
}
