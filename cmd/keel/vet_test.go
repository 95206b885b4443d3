package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// corpus is schema's bad-input corpus, with a golden file of expected
// problems next to each entry.
const corpus = "../../schema/testdata/bad"

// TestVetCorpus runs `keel vet` on every bad input: exit 2, and stderr is
// exactly the golden problems followed by the count.
func TestVetCorpus(t *testing.T) {
	ents, err := os.ReadDir(corpus)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		name := e.Name()
		if !e.IsDir() && !strings.HasSuffix(name, ".cue") {
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join(corpus, strings.TrimSuffix(name, ".cue")+".golden"))
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := Main([]string{"vet", filepath.Join(corpus, name)}, &stdout, &stderr)
			if code != exitError {
				t.Errorf("exit %d, want %d\n%s", code, exitError, stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout: %q", stdout.String())
			}
			got := strings.ReplaceAll(stderr.String(), corpus+"/", "")
			lines := strings.Count(string(want), "\n")
			wantAll := string(want) + "keel vet: " + plural(lines, "problem") + "\n"
			if got != wantAll {
				t.Errorf("stderr:\n%s\nwant:\n%s", got, wantAll)
			}
		})
	}
	if n < 30 {
		t.Errorf("corpus has %d entries, want at least 30", n)
	}
}

// TestVetExitCodes checks 0 for valid input, 2 for invalid or unreadable
// input and bad flags, and that -c and a positional path mean the same.
func TestVetExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"vet", "../../examples/proxmox-vdo-thick.cue"}, exitOK},
		{[]string{"vet", "-c", "../../examples/proxmox-vdo-thick.cue"}, exitOK},
		{[]string{"vet", "--print", "../../examples/harvester-thin.cue"}, exitOK},
		{[]string{"vet", "does-not-exist.cue"}, exitError},
		{[]string{"vet", "-c", t.TempDir()}, exitError},
		{[]string{"vet", "--no-such-flag"}, exitError},
		{[]string{"vet", "-h"}, exitOK},
		{[]string{"vet", filepath.Join(corpus, "vdo-overcommitted.cue")}, exitError},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(tc.args, &stdout, &stderr); code != tc.code {
			t.Errorf("keel %v: exit %d, want %d\n%s", tc.args, code, tc.code, stderr.String())
		}
	}
}
