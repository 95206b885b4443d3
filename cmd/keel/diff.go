package main

import (
	"fmt"
	"strings"
)

// unifiedDiff returns the unified diff (diff -u, three lines of context)
// that turns before into after, with path in the ---/+++ headers, or ""
// when they are equal. The files keel writes are small and its edits local:
// the common head and tail are cut off first and only the middle is
// compared (a longest common subsequence of lines).
func unifiedDiff(path, before, after string) string {
	if before == after {
		return ""
	}
	a, b := splitLines(before), splitLines(after)
	// ops is the edit script: ' ' keep, '-' delete from a, '+' insert from b.
	type op struct {
		kind byte
		line string
	}
	var ops []op
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	for _, l := range a[:head] {
		ops = append(ops, op{' ', l})
	}
	ma, mb := a[head:len(a)-tail], b[head:len(b)-tail]
	// lcs[i][j] is the LCS length of ma[i:] and mb[j:].
	lcs := make([][]int, len(ma)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(mb)+1)
	}
	for i := len(ma) - 1; i >= 0; i-- {
		for j := len(mb) - 1; j >= 0; j-- {
			if ma[i] == mb[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(ma) || j < len(mb) {
		switch {
		case i < len(ma) && j < len(mb) && ma[i] == mb[j]:
			ops = append(ops, op{' ', ma[i]})
			i, j = i+1, j+1
		case i < len(ma) && (j == len(mb) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', ma[i]}) // deletions first, as diff -u prints them
			i++
		default:
			ops = append(ops, op{'+', mb[j]})
			j++
		}
	}
	for _, l := range a[len(a)-tail:] {
		ops = append(ops, op{' ', l})
	}

	const context = 3
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", path, path)
	// Walk the script, emitting a hunk around each run of changes; hunks
	// closer than 2*context lines merge.
	lineA, lineB := make([]int, len(ops)+1), make([]int, len(ops)+1) // lines of a and b before op k
	for k, o := range ops {
		lineA[k+1], lineB[k+1] = lineA[k], lineB[k]
		if o.kind != '+' {
			lineA[k+1]++
		}
		if o.kind != '-' {
			lineB[k+1]++
		}
	}
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		start := max(0, k-context)
		end := k
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*context {
				end = min(len(ops), end+context)
				break
			}
			end = run
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(lineA[start], lineA[end]), hunkRange(lineB[start], lineB[end]))
		for _, o := range ops[start:end] {
			out.WriteByte(o.kind)
			out.WriteString(o.line)
			out.WriteByte('\n')
		}
		k = end
	}
	return out.String()
}

// hunkRange is a hunk header's "start,count" for lines [from, to) (1-based
// start; an empty range names the line before it, as diff -u does).
func hunkRange(from, to int) string {
	n := to - from
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", from)
	case 1:
		return fmt.Sprintf("%d", from+1)
	}
	return fmt.Sprintf("%d,%d", from+1, n)
}

// splitLines splits s into lines without their newlines.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
