// Command mangen renders keel's own help text as man pages (roff) and a bash
// completion scripts (bash, zsh, fish), so all say exactly what the binary says. It runs the
// keel binary given with -keel: `keel help` for the command list and
// `keel <command> -h` for each command's usage and flags.
//
//	go run ./packaging/mangen -keel bin/keel -man DIR -completion FILE -zsh FILE -fish FILE
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/keel-storage/keel/probes/hostio"
)

// Command is one keel subcommand as its help text describes it.
type Command struct {
	Name     string
	Summary  string
	Synopsis string   // the "usage:" line without the prefix
	Text     []string // description lines, blank lines as ""
	Flags    []Flag
}

// Flag is one flag from Go's flag.PrintDefaults output.
type Flag struct {
	Name string // without dashes
	Arg  string // the argument's name, "" for a boolean
	Doc  string
}

// Option is the flag as completion offers it: "-c" for a one-letter name,
// "--name" otherwise (Go's flag package takes either dash count).
func (f Flag) Option() string {
	if len(f.Name) == 1 {
		return "-" + f.Name
	}
	return "--" + f.Name
}

// parseCommands reads the command table of `keel help`.
func parseCommands(help string) []Command {
	var out []Command
	in := false
	for _, line := range strings.Split(help, "\n") {
		switch {
		case line == "commands:":
			in = true
		case in && strings.HasPrefix(line, "  "):
			f := strings.Fields(line)
			if len(f) == 0 || f[0] == "version" {
				continue
			}
			out = append(out, Command{Name: f[0], Summary: strings.Join(f[1:], " ")})
		case in:
			in = line == ""
			if len(out) > 0 {
				in = false
			}
		}
	}
	return out
}

// parseUsage fills a command from its `-h` output: the usage line, the
// text up to the flags, and the flags.
func parseUsage(c *Command, usage string) {
	lines := strings.Split(strings.TrimRight(usage, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case strings.HasPrefix(line, "usage: "):
			if c.Synopsis != "" {
				c.Text = append(c.Text, line)
				continue
			}
			// keel wraps a long usage into indented continuation lines, up
			// to the blank line before the description: one SYNOPSIS.
			c.Synopsis = strings.TrimPrefix(line, "usage: ")
			for i+1 < len(lines) && strings.HasPrefix(lines[i+1], " ") {
				i++
				c.Synopsis += " " + strings.TrimSpace(lines[i])
			}
		case strings.HasPrefix(line, "  -"):
			name, arg, _ := strings.Cut(strings.TrimPrefix(line, "  -"), " ")
			// A boolean flag with a one-line doc puts it on the same line.
			if i := strings.IndexByte(name, '\t'); i >= 0 {
				c.Flags = append(c.Flags, Flag{Name: name[:i], Doc: strings.TrimSpace(name[i:])})
				continue
			}
			f := Flag{Name: name, Arg: strings.TrimSpace(arg)}
			var doc []string
			for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "    \t") {
				i++
				doc = append(doc, strings.TrimSpace(lines[i]))
			}
			f.Doc = strings.Join(doc, " ")
			c.Flags = append(c.Flags, f)
		case len(c.Flags) == 0:
			c.Text = append(c.Text, strings.TrimSpace(line))
		}
	}
	for len(c.Text) > 0 && c.Text[0] == "" {
		c.Text = c.Text[1:]
	}
}

// roffEscape escapes text for a roff line: backslashes, and a leading dot or
// quote that would make the line a request.
func roffEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// Page renders one command's man page, section 8.
func Page(c Command, version string) string {
	var b strings.Builder
	title := "KEEL-" + strings.ToUpper(c.Name)
	fmt.Fprintf(&b, ".TH %s 8 \"\" \"keel %s\" \"System Administration\"\n", title, version)
	fmt.Fprintf(&b, ".SH NAME\nkeel\\-%s \\- %s\n", roffEscape(c.Name), roffEscape(c.Summary))
	fmt.Fprintf(&b, ".SH SYNOPSIS\n.B %s\n", roffEscape(c.Synopsis))
	if len(c.Text) > 0 {
		b.WriteString(".SH DESCRIPTION\n")
		for _, t := range c.Text {
			if t == "" {
				b.WriteString(".PP\n")
				continue
			}
			b.WriteString(roffEscape(t) + "\n")
		}
	}
	if len(c.Flags) > 0 {
		b.WriteString(".SH OPTIONS\n")
		for _, f := range c.Flags {
			b.WriteString(".TP\n")
			if f.Arg != "" {
				fmt.Fprintf(&b, ".BI \\-%s \" %s\"\n", roffEscape(f.Name), roffEscape(f.Arg))
			} else {
				fmt.Fprintf(&b, ".B \\-%s\n", roffEscape(f.Name))
			}
			b.WriteString(roffEscape(f.Doc) + "\n")
		}
	}
	b.WriteString(".SH SEE ALSO\n.BR keel (8)\n")
	return b.String()
}

// IndexPage renders keel(8): the command list.
func IndexPage(cmds []Command, version string) string {
	var b strings.Builder
	fmt.Fprintf(&b, ".TH KEEL 8 \"\" \"keel %s\" \"System Administration\"\n", version)
	b.WriteString(".SH NAME\nkeel \\- declarative storage agent for Linux hypervisors (LVM\\-VDO, dm\\-thin, bcache, lvm.conf)\n")
	b.WriteString(".SH SYNOPSIS\n.B keel\n.I command\n[flags]\n.SH COMMANDS\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, ".TP\n.B %s\n%s (see \\fBkeel\\-%s\\fR(8))\n", roffEscape(c.Name), roffEscape(c.Summary), roffEscape(c.Name))
	}
	b.WriteString(".SH FILES\n.TP\n.I /etc/keel/*.cue\nthe desired state\n")
	b.WriteString(".TP\n.I /etc/udev/rules.d/68\\-keel\\-pvscan\\-on\\-lvs.rules, /etc/udev/rules.d/70\\-keel\\-bcache.rules\ngenerated by \\fBkeel udev\\-rules \\-\\-write\\fR and \\fBkeel activate\\fR\n")
	return b.String()
}

// Completion renders a bash completion script: commands first, then each
// command's flags.
func Completion(cmds []Command) string {
	var b strings.Builder
	b.WriteString("# bash completion for keel; generated from keel's help text by packaging/mangen.\n")
	b.WriteString("_keel() {\n\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n")
	names := []string{"help", "version"}
	for _, c := range cmds {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	fmt.Fprintf(&b, "\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n\t\tCOMPREPLY=($(compgen -W %q -- \"$cur\"))\n\t\treturn\n\tfi\n", strings.Join(names, " "))
	b.WriteString("\tcase $prev in\n\t-c|--node|--textfile|--command-log|--lvm-conf|--root|-node|-textfile|-command-log|-lvm-conf|-root)\n\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n\t\treturn;;\n\tesac\n")
	b.WriteString("\tcase ${COMP_WORDS[1]} in\n")
	for _, c := range cmds {
		var fl []string
		for _, f := range c.Flags {
			fl = append(fl, f.Option())
		}
		fmt.Fprintf(&b, "\t%s) COMPREPLY=($(compgen -W %q -- \"$cur\"));;\n", c.Name, strings.Join(fl, " "))
	}
	b.WriteString("\tesac\n}\ncomplete -o default -F _keel keel\n")
	return b.String()
}

// ZshCompletion renders a zsh completion script (#compdef keel): commands
// with their summaries, then each command's flags with their first line of
// help; flags that take a value complete file names.
func ZshCompletion(cmds []Command) string {
	var b strings.Builder
	b.WriteString("#compdef keel\n# zsh completion for keel; generated from the help text of keel by packaging/mangen.\n")
	b.WriteString("_keel() {\n\tlocal -a commands\n\tcommands=(\n")
	b.WriteString("\t\t'help:show the help of a command'\n\t\t'version:print the version'\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "\t\t'%s:%s'\n", c.Name, shortDoc(c.Summary))
	}
	b.WriteString("\t)\n\tif (( CURRENT == 2 )); then\n\t\t_describe -t commands 'keel command' commands\n\t\treturn\n\tfi\n")
	b.WriteString("\t(( CURRENT-- )); shift words\n\tcase $words[1] in\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "\t%s)\n\t\t_arguments", c.Name)
		for _, f := range c.Flags {
			spec := f.Option() + "[" + shortDoc(f.Doc) + "]"
			if f.Arg != "" {
				spec += ":" + shortDoc(f.Arg) + ":_files"
			}
			fmt.Fprintf(&b, " \\\n\t\t\t'%s'", spec)
		}
		b.WriteString(";;\n")
	}
	b.WriteString("\tesac\n}\n_keel \"$@\"\n")
	return b.String()
}

// FishCompletion renders a fish completion script: the commands while none
// is given, then each command's flags.
func FishCompletion(cmds []Command) string {
	var b strings.Builder
	b.WriteString("# fish completion for keel; generated from the help text of keel by packaging/mangen.\n")
	b.WriteString("complete -c keel -f\n")
	b.WriteString("complete -c keel -n __fish_use_subcommand -a help -d 'show the help of a command'\n")
	b.WriteString("complete -c keel -n __fish_use_subcommand -a version -d 'print the version'\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "complete -c keel -n __fish_use_subcommand -a %s -d '%s'\n", c.Name, shortDoc(c.Summary))
	}
	for _, c := range cmds {
		for _, f := range c.Flags {
			opt := "-l " + f.Name
			if len(f.Name) == 1 {
				opt = "-s " + f.Name
			}
			if f.Arg != "" {
				opt += " -r -F"
			}
			fmt.Fprintf(&b, "complete -c keel -n '__fish_seen_subcommand_from %s' %s -d '%s'\n", c.Name, opt, shortDoc(f.Doc))
		}
	}
	return b.String()
}

// shortDoc is the first line of a help text without the characters that
// would end a quoted word or a zsh _arguments field.
func shortDoc(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if strings.ContainsRune("'[]:\\`$", r) {
			return -1
		}
		return r
	}, s))
}

// output runs keel with args and returns stdout and stderr together (help
// goes to stdout, a command's usage to stderr); the exit status is ignored.
func output(keel string, args ...string) string {
	res, _ := hostio.ExecRunner{Timeout: time.Minute}.Run(context.Background(), hostio.Cmd{Name: keel, Args: args})
	return string(res.Stdout) + string(res.Stderr)
}

// Collect runs the binary and returns its commands with their usage.
func Collect(keel string) ([]Command, string, error) {
	cmds := parseCommands(output(keel, "help"))
	if len(cmds) == 0 {
		return nil, "", fmt.Errorf("%s help: no command table", keel)
	}
	for i := range cmds {
		parseUsage(&cmds[i], output(keel, cmds[i].Name, "-h"))
		if cmds[i].Synopsis == "" {
			return nil, "", fmt.Errorf("%s %s -h: no usage line", keel, cmds[i].Name)
		}
	}
	version := strings.TrimPrefix(strings.TrimSpace(output(keel, "version")), "keel ")
	return cmds, version, nil
}

func main() {
	keel := flag.String("keel", "bin/keel", "the keel `BINARY` to document")
	manDir := flag.String("man", "", "write section 8 pages (uncompressed) into `DIR`")
	completion := flag.String("completion", "", "write the bash completion script to `FILE`")
	zsh := flag.String("zsh", "", "write the zsh completion script to `FILE`")
	fish := flag.String("fish", "", "write the fish completion script to `FILE`")
	flag.Parse()
	cmds, version, err := Collect(*keel)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mangen:", err)
		os.Exit(1)
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "mangen:", err)
			os.Exit(1)
		}
	}
	if *manDir != "" {
		if err := os.MkdirAll(*manDir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "mangen:", err)
			os.Exit(1)
		}
		write(filepath.Join(*manDir, "keel.8"), IndexPage(cmds, version))
		for _, c := range cmds {
			write(filepath.Join(*manDir, "keel-"+c.Name+".8"), Page(c, version))
		}
	}
	if *completion != "" {
		write(*completion, Completion(cmds))
	}
	if *zsh != "" {
		write(*zsh, ZshCompletion(cmds))
	}
	if *fish != "" {
		write(*fish, FishCompletion(cmds))
	}
}
