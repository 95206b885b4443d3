package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every mutation's old text is in its file exactly once, so a change to a
// safety rule's line fails go test here too, not only make mutate.
func TestListMatchesTree(t *testing.T) {
	for _, err := range checkList(filepath.Join("..", ".."), mutations) {
		t.Error(err)
	}
	rules := map[string]bool{}
	for _, m := range mutations {
		if rules[m.Rule] {
			t.Errorf("rule %q listed twice", m.Rule)
		}
		rules[m.Rule] = true
		if m.Run == "" || len(m.Pkgs) == 0 {
			t.Errorf("%s: no tests named to kill it", m.Rule)
		}
		if strings.Contains(m.New, "\n") != strings.Contains(m.Old, "\n") || strings.Count(m.Old, "\n") != strings.Count(m.New, "\n") {
			t.Errorf("%s: not a one-line change", m.Rule)
		}
	}
}

// apply replaces exactly one occurrence and refuses anything else.
func TestApply(t *testing.T) {
	m := Mutation{File: "f.go", Old: "if a {", New: "if !a {"}
	if got, err := apply([]byte("x\nif a {\ny"), m); err != nil || string(got) != "x\nif !a {\ny" {
		t.Errorf("one occurrence: %q %v", got, err)
	}
	for _, src := range []string{"x", "if a {\nif a {"} {
		if _, err := apply([]byte(src), m); err == nil || !strings.Contains(err.Error(), "f.go") {
			t.Errorf("%q: %v, want an error naming the file", src, err)
		}
	}
}

// docs/testing.md shows the list as -list prints it.
func TestDocsListEveryMutation(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "testing.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := table(mutations); !strings.Contains(string(doc), want) {
		t.Errorf("docs/testing.md lacks the list of mutations; paste in the output of go run ./internal/mutate -list:\n%s", want)
	}
}
