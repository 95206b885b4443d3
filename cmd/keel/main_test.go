package main

import (
	"slices"
	"strings"
	"testing"
)

func TestOneShotGC(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tc := range []struct {
		args []string
		env  func(string) string
		want gcPolicy
		ok   bool
	}{
		{[]string{"check", "-c", "/etc/keel"}, env(), gcPolicy{-1, oneShotMemoryLimit}, true},
		{[]string{"apply"}, env(), gcPolicy{-1, oneShotMemoryLimit}, true},
		{[]string{"run"}, env(), gcPolicy{}, false},                            // the daemon keeps the default collector
		{[]string{"check"}, env("GOGC", "100"), gcPolicy{}, false},             // the operator's GOGC wins
		{[]string{"check"}, env("GOMEMLIMIT", "64MiB"), gcPolicy{-1, 0}, true}, // and their limit
		{nil, env(), gcPolicy{}, false},
	} {
		got, ok := oneShotGC(tc.args, tc.env)
		if got != tc.want || ok != tc.ok {
			t.Errorf("oneShotGC(%v): %+v %v, want %+v %v", tc.args, got, ok, tc.want, tc.ok)
		}
	}
}

// TestCommandTable holds the command table to the order `keel help` shows
// (by name) and to one entry per name, each with a summary and a run.
func TestCommandTable(t *testing.T) {
	for i, c := range commands {
		if c.name == "" || c.summary == "" || c.run == nil {
			t.Errorf("command %d (%q) lacks a name, summary or run", i, c.name)
		}
		if i > 0 && commands[i-1].name >= c.name {
			t.Errorf("command %q follows %q: the table is not sorted by name, or lists a name twice", c.name, commands[i-1].name)
		}
		if got, ok := lookup(c.name); !ok || got.name != c.name {
			t.Errorf("lookup(%q) = %q, %v", c.name, got.name, ok)
		}
	}
	if _, ok := lookup("help"); ok {
		t.Error("help is in the table; Main handles it before the lookup")
	}
}

// TestUsageNamesEveryFlag: each command's usage line (with its continuation
// lines) names every flag its -h lists, except the aliases ("same as
// --size"), so the synopsis and the man page's SYNOPSIS leave none out.
func TestUsageNamesEveryFlag(t *testing.T) {
	for _, c := range commands {
		var out, errOut strings.Builder
		if code := c.run([]string{"-h"}, &out, &errOut); code != exitOK {
			t.Fatalf("keel %s -h: exit %d: %s", c.name, code, errOut.String())
		}
		lines := strings.Split(out.String(), "\n")
		if !strings.HasPrefix(lines[0], "usage: keel "+c.name) {
			t.Fatalf("keel %s -h: first line %q", c.name, lines[0])
		}
		synopsis := lines[0]
		for _, l := range lines[1:] {
			if !strings.HasPrefix(l, " ") {
				break
			}
			synopsis += " " + strings.TrimSpace(l)
		}
		words := strings.FieldsFunc(synopsis, func(r rune) bool { return strings.ContainsRune(" []|", r) })
		for i, l := range lines {
			name, _, _ := strings.Cut(strings.TrimPrefix(l, "  -"), " ")
			name, _, _ = strings.Cut(name, "\t")
			if !strings.HasPrefix(l, "  -") || strings.Contains(lines[i]+lines[min(i+1, len(lines)-1)], "same as --") {
				continue
			}
			dash := "--" + name
			if len(name) == 1 {
				dash = "-" + name
			}
			if !slices.Contains(words, dash) {
				t.Errorf("keel %s: usage %q does not name %s", c.name, synopsis, dash)
			}
		}
	}
}
