package shell_test

import (
	"context"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/shell"
)

func TestJoin(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"lvcreate", "-L", "40G", "a b", "it's", ""}, `lvcreate -L 40G 'a b' 'it'\''s' ''`},
		{[]string{"lvchange", "--vdosettings", "max_discard=4096 ack_threads=1", "vg/pool"}, `lvchange --vdosettings 'max_discard=4096 ack_threads=1' vg/pool`},
		{[]string{"pvmove", "/dev/sdb:100-200", "/dev/nvme0n1"}, `pvmove /dev/sdb:100-200 /dev/nvme0n1`},
		{[]string{"echo", "$HOME", "*", "a|b"}, `echo '$HOME' '*' 'a|b'`},
	} {
		if got := shell.Join(c.argv); got != c.want {
			t.Errorf("shell.Join(%q) = %s, want %s", c.argv, got, c.want)
		}
	}
	if got := shell.Lines([][]string{{"vgchange", "-ay", "vg"}, {"pvscan", "--cache", "a b"}}); got != `vgchange -ay vg; pvscan --cache 'a b'` {
		t.Errorf("Lines = %s", got)
	}
}

// What Join prints, typed into a shell, gives the program exactly the
// argv it was made from.
func TestJoinRoundTrip(t *testing.T) {
	argv := []string{"x", "a b", "it's", "", "$HOME", "`id`", "\\", "a\"b", "*", "~", "tab\there", "!#;&|<>(){}[]?"}
	line := shell.Join(append([]string{"printf", `%s\n`}, argv...))
	res, err := hostio.ExecRunner{}.Run(context.Background(), hostio.Cmd{Name: "sh", Args: []string{"-c", line}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("sh -c %s: %v %q", line, err, res.Stderr)
	}
	if got := strings.Split(strings.TrimSuffix(string(res.Stdout), "\n"), "\n"); strings.Join(got, "\x00") != strings.Join(argv, "\x00") {
		t.Errorf("the shell got %q from %s", got, line)
	}
}
