package hostio

import (
	"context"
	"strings"
	"testing"
)

func TestShellJoin(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"lvcreate", "-L", "40G", "a b", "it's", ""}, `lvcreate -L 40G 'a b' 'it'\''s' ''`},
		{[]string{"lvchange", "--vdosettings", "max_discard=4096 ack_threads=1", "vg/pool"}, `lvchange --vdosettings 'max_discard=4096 ack_threads=1' vg/pool`},
		{[]string{"pvmove", "/dev/sdb:100-200", "/dev/nvme0n1"}, `pvmove /dev/sdb:100-200 /dev/nvme0n1`},
		{[]string{"echo", "$HOME", "*", "a|b"}, `echo '$HOME' '*' 'a|b'`},
	} {
		if got := ShellJoin(c.argv); got != c.want {
			t.Errorf("ShellJoin(%q) = %s, want %s", c.argv, got, c.want)
		}
	}
	if got := ShellLines([][]string{{"vgchange", "-ay", "vg"}, {"pvscan", "--cache", "a b"}}); got != `vgchange -ay vg; pvscan --cache 'a b'` {
		t.Errorf("ShellLines = %s", got)
	}
}

// What ShellJoin prints, typed into a shell, gives the program exactly the
// argv it was made from.
func TestShellJoinRoundTrip(t *testing.T) {
	argv := []string{"x", "a b", "it's", "", "$HOME", "`id`", "\\", "a\"b", "*", "~", "tab\there", "!#;&|<>(){}[]?"}
	line := ShellJoin(append([]string{"printf", `%s\n`}, argv...))
	res, err := ExecRunner{}.Run(context.Background(), Cmd{Name: "sh", Args: []string{"-c", line}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("sh -c %s: %v %q", line, err, res.Stderr)
	}
	if got := strings.Split(strings.TrimSuffix(string(res.Stdout), "\n"), "\n"); strings.Join(got, "\x00") != strings.Join(argv, "\x00") {
		t.Errorf("the shell got %q from %s", got, line)
	}
}
