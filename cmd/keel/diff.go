package main

import (
	"bytes"
	"regexp"
	"strings"

	"github.com/rogpeppe/go-internal/diff"
)

// hunkHeader matches a hunk header of a unified diff.
var hunkHeader = regexp.MustCompile(`(?m)^@@ -(\d+(?:,\d+)?) \+(\d+(?:,\d+)?) @@$`)

// unifiedDiff returns the unified diff (diff -u, three lines of context)
// that turns before into after, with path in the ---/+++ headers, or ""
// when they are equal. It is go-internal's diff in the form diff -u prints:
// without the leading "diff old new" line, and with the count of a
// one-line range left out (@@ -4 +4 @@).
func unifiedDiff(path, before, after string) string {
	d := diff.Diff(path, []byte(before), path, []byte(after))
	if d == nil {
		return ""
	}
	_, d, _ = bytes.Cut(d, []byte("\n"))
	return hunkHeader.ReplaceAllStringFunc(string(d), func(h string) string {
		m := hunkHeader.FindStringSubmatch(h)
		return "@@ -" + strings.TrimSuffix(m[1], ",1") + " +" + strings.TrimSuffix(m[2], ",1") + " @@"
	})
}
