package main

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// buildKeel builds the real keel binary: the pages must say what it says.
func buildKeel(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "keel")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/keel").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestCollectFromBinary(t *testing.T) {
	cmds, version, err := Collect(buildKeel(t))
	if err != nil {
		t.Fatal(err)
	}
	if version == "" {
		t.Error("no version")
	}
	var names []string
	var activate *Command
	for i, c := range cmds {
		names = append(names, c.Name)
		if c.Name == "activate" {
			activate = &cmds[i]
		}
	}
	for _, want := range []string{"activate", "apply", "check", "run", "udev-rules", "vet"} {
		if !slices.Contains(names, want) {
			t.Errorf("command %s missing from %v", want, names)
		}
	}
	if activate == nil {
		t.Fatal("no activate")
	}
	if !strings.HasPrefix(activate.Synopsis, "keel activate ") {
		t.Errorf("synopsis %q", activate.Synopsis)
	}
	var timeout Flag
	for _, f := range activate.Flags {
		if f.Name == "timeout" {
			timeout = f
		}
	}
	if timeout.Arg != "duration" || !strings.Contains(timeout.Doc, "default 2m0s") {
		t.Errorf("timeout flag %+v", timeout)
	}
	// The SYNOPSIS is the whole usage, continuation lines included: every
	// flag of recommend (the longest) and none of it left in the text.
	for _, c := range cmds {
		if c.Name != "recommend" {
			continue
		}
		for _, f := range c.Flags {
			if !strings.HasPrefix(f.Doc, "same as ") && !strings.Contains(c.Synopsis, f.Option()+" ") && !strings.Contains(c.Synopsis, f.Option()+"]") {
				t.Errorf("recommend synopsis %q lacks %s", c.Synopsis, f.Option())
			}
		}
		if len(c.Text) > 0 && strings.HasPrefix(c.Text[0], "[") {
			t.Errorf("recommend: a synopsis line left in the description: %q", c.Text[0])
		}
	}
	page := Page(*activate, version)
	for _, want := range []string{".TH KEEL-ACTIVATE 8", ".SH OPTIONS", `.BI \-timeout " duration"`, ".SH DESCRIPTION"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	comp := Completion(cmds)
	if !strings.Contains(comp, `activate) COMPREPLY=($(compgen -W "--audit -c --leave-pass-to-daemon --log-level`) {
		t.Errorf("completion:\n%s", comp)
	}
	zsh, fish := ZshCompletion(cmds), FishCompletion(cmds)
	for _, want := range []string{"#compdef keel\n", "\t\t'activate:", "\tactivate)\n\t\t_arguments", "'--timeout[", ":duration:_files'"} {
		if !strings.Contains(zsh, want) {
			t.Errorf("zsh completion lacks %q:\n%s", want, zsh)
		}
	}
	for _, want := range []string{"complete -c keel -n __fish_use_subcommand -a activate -d '", "complete -c keel -n '__fish_seen_subcommand_from activate' -l timeout -r -F -d '", "-s c -r -F"} {
		if !strings.Contains(fish, want) {
			t.Errorf("fish completion lacks %q:\n%s", want, fish)
		}
	}
	for shell, script := range map[string]string{"zsh": zsh, "fish": fish} {
		for i, line := range strings.Split(script, "\n") {
			if strings.Count(line, "'")%2 != 0 {
				t.Errorf("%s completion line %d: unbalanced quote: %s", shell, i+1, line)
			}
		}
		if p, err := exec.LookPath(shell); err == nil {
			cmd := exec.Command(p, "-n")
			cmd.Stdin = strings.NewReader(script)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s -n: %v\n%s", shell, err, out)
			}
		}
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		cmd := exec.Command(bash, "-n")
		cmd.Stdin = strings.NewReader(comp)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("bash -n: %v\n%s", err, out)
		}
	}
}

func TestRoffEscape(t *testing.T) {
	for in, want := range map[string]string{".hidden": `\&.hidden`, `a\b`: `a\eb`, "--x": `\-\-x`, "'q": `\&'q`} {
		if got := roffEscape(in); got != want {
			t.Errorf("roffEscape(%q) = %q, want %q", in, got, want)
		}
	}
}
