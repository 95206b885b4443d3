// Package shell renders commands for people: the argv keel runs, quoted so
// that a POSIX shell hands the program exactly that argv. It is pure text,
// shared by the readers, the planner and the reports.
package shell

import "strings"

// safeWord holds the bytes a POSIX shell never splits or expands inside a
// word; a word made only of them is printed bare.
const safeWord = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:+,@%"

// Join renders argv for a person to read or paste into a POSIX shell:
// plain words stay bare, every other word is single-quoted (an embedded '
// as '\”), so that the shell hands the program exactly argv. Every
// command keel prints (plans, remedies, recommendations) goes through it.
func Join(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.Trim(a, safeWord) == "" {
			out[i] = a
		} else {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

// Lines renders several commands as one line, each Join'ed and
// separated by "; ", as a remedy a person types in one go.
func Lines(cmds [][]string) string {
	lines := make([]string, len(cmds))
	for i, c := range cmds {
		lines[i] = Join(c)
	}
	return strings.Join(lines, "; ")
}
