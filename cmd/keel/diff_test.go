package main

import "testing"

func TestUnifiedDiff(t *testing.T) {
	before := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n"
	after := "a\nb\nc\nD\ne\nf\ng\nh\ni\nj\nk\nl\nm\n"
	want := `--- f
+++ f
@@ -1,7 +1,7 @@
 a
 b
 c
-d
+D
 e
 f
 g
@@ -10,3 +10,4 @@
 j
 k
 l
+m
`
	if got := unifiedDiff("f", before, after); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if got := unifiedDiff("f", before, before); got != "" {
		t.Errorf("equal files: %q", got)
	}
	// A new file: every line added.
	if got, want := unifiedDiff("f", "", "x\ny\n"), "--- f\n+++ f\n@@ -0,0 +1,2 @@\n+x\n+y\n"; got != want {
		t.Errorf("new file:\n%s\nwant:\n%s", got, want)
	}
	// A line deleted in the middle.
	if got, want := unifiedDiff("f", "1\n2\n3\n", "1\n3\n"), "--- f\n+++ f\n@@ -1,3 +1,2 @@\n 1\n-2\n 3\n"; got != want {
		t.Errorf("deletion:\n%s\nwant:\n%s", got, want)
	}
	// A one-line range has no count, as diff -u prints it.
	if got, want := unifiedDiff("f", "a\n", "b\n"), "--- f\n+++ f\n@@ -1 +1 @@\n-a\n+b\n"; got != want {
		t.Errorf("one line:\n%s\nwant:\n%s", got, want)
	}
	// A missing final newline is a change, marked as diff -u marks it.
	if got, want := unifiedDiff("f", "a", "a\n"), "--- f\n+++ f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n"; got != want {
		t.Errorf("final newline:\n%s\nwant:\n%s", got, want)
	}
}
