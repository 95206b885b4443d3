package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/probes/shell"
	"github.com/keel-storage/keel/schema"
)

// The exit-code contract every subcommand holds (docs/cli.md, "Exit
// status"); each test script under testdata/script holds it for its command.
const (
	// exitOK: the command did what was asked and found nothing at warning
	// or above (valid, converged, in sync, written).
	exitOK = 0
	// exitFindings: the command did its job and the answer is "not as it
	// should be": findings at warning or above, drifted udev rules, a stack
	// still incomplete at the timeout, a pool the sizes do not fit, a wipe
	// refused for safety (nothing changed).
	exitFindings = 1
	// exitError: keel could not do its job, so there is no verdict: a bad
	// flag or argument, a missing, unreadable or invalid desired state, a
	// mutating command run without root, a tool missing, a failed probe,
	// command or write.
	exitError = 2
)

// command is one keel subcommand.
type command struct {
	name    string
	summary string
	// run executes the subcommand with its own arguments and returns the exit code.
	run func(args []string, stdout, stderr io.Writer) int
}

// commands lists every subcommand in the order `keel help` shows them
// (by name); help and version follow them there. TestCommandTable holds
// the order and the uniqueness of the names.
var commands = []command{
	{name: "ack-vg", summary: "acknowledge another VG under a declared name (vg.uuid_changed): record its vg_uuid", run: runAckVG},
	{name: "activate", summary: "bring the declared stack up bottom-up at boot (keel-activate.service)", run: runActivate},
	{name: "apply", summary: "converge the host to the desired state once", run: runApply},
	{name: "check", summary: "compare the host with the desired state (or audit it) and list findings", run: runCheck},
	{name: "export", summary: "write a desired state that describes this host as it is, to review and adopt", run: runExport},
	{name: "hold", summary: "put an object on hold for storage surgery by hand: keel changes nothing on it until released", run: runHold},
	{name: "plan", summary: "show the actions keel apply would take, grouped by class, with their commands", run: runPlan},
	{name: "recommend", summary: "VDO pool calculator: layout, thick virtual size, RAM, threads, lvcreate line", run: runRecommend},
	{name: "release", summary: "end a hold keel hold put on an object: keel acts on it again", run: runRelease},
	{name: "run", summary: "the daemon: keep the host converged (systemd Type=notify)", run: runDaemon},
	{name: "snapshot", summary: "record one probe pass of this host into a node snapshot (txtar)", run: runSnapshot},
	{name: "status", summary: "show the storage stack keel sees on this host (or in a node snapshot)", run: runStatus},
	{name: "udev-rules", summary: "generate, check or install keel's udev rules (PV scan on LVs, bcache tunables)", run: runUdevRules},
	{name: "vet", summary: "validate the desired state (files or a drop-in directory) against keel's schema", run: runVet},
	{name: "wipe", summary: "remove LVs safely: rename to del-<name>, zero or discard in steps, lvremove", run: runWipe},
}

// lookup returns the subcommand called name.
func lookup(name string) (command, bool) {
	i := slices.IndexFunc(commands, func(c command) bool { return c.name == name })
	if i < 0 {
		return command{}, false
	}
	return commands[i], true
}

// Version is set at build time with -ldflags "-X main.Version=...".
var Version = "dev"

// Main runs keel with the given arguments (without the program name) and
// returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitError
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	case "help":
		return help(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "keel %s\n", Version)
		return exitOK
	}
	c, ok := lookup(args[0])
	if !ok {
		fmt.Fprintf(stderr, "keel: unknown command %q; run 'keel help' for the list\n", args[0])
		return exitError
	}
	return c.run(args[1:], stdout, stderr)
}

// help implements `keel help [COMMAND]`: the command list, or one
// command's help (the same as `keel COMMAND -h`), on stdout.
func help(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		usage(stdout)
		return exitOK
	case args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" && len(args) == 1:
		fmt.Fprintln(stdout, "usage: keel help [COMMAND]\n\nLists the commands, or shows the help of one (the same as keel COMMAND -h).")
		fmt.Fprintln(stdout, "Exit status: 0 shown, 2 unknown command.")
		return exitOK
	case len(args) > 1:
		fmt.Fprintf(stderr, "keel help: unexpected argument %q; run 'keel help' for the list of commands\n", args[1])
		return exitError
	case args[0] == "version":
		fmt.Fprintln(stdout, "usage: keel version\n\nPrints keel's version. Exit status: 0.")
		return exitOK
	}
	c, ok := lookup(args[0])
	if !ok {
		fmt.Fprintf(stderr, "keel help: unknown command %q; run 'keel help' for the list\n", args[0])
		return exitError
	}
	return c.run([]string{"-h"}, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "keel: declarative storage agent for Linux hypervisors (LVM-VDO, dm-thin, bcache, lvm.conf)")
	fmt.Fprintln(w, "\nusage: keel <command> [flags]\n\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-10s %s\n", "help", "show the help of a command: keel help <command>")
	fmt.Fprintf(w, "  %-10s %s\n", "version", "print keel's version")
	fmt.Fprintln(w, "\nExit status: 0 done and nothing at warning or above, 1 done and findings (or drift,")
	fmt.Fprintln(w, "an incomplete stack, a refusal), 2 keel could not do its job. 'keel help <command>'")
	fmt.Fprintln(w, "shows a command's flags and what its exit status means.")
}

// newFlags returns the flag set of subcommand name, whose positional
// arguments are args ("" for none, "[VG/LV ...]"). Its Usage prints the
// usage line (synopsis: generated from the flags, so none is left out),
// the description (lines of text) and the flags to the flag set's output,
// which parseArgs points at stdout for -h.
func newFlags(name, args string, description ...string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "usage: "+synopsis(fs, args))
		if len(description) > 0 {
			fmt.Fprintln(w)
			for _, l := range description {
				fmt.Fprintln(w, l)
			}
		}
		fs.PrintDefaults()
	}
	return fs
}

// synopsisWidth is where synopsis wraps its words, as man pages do: the
// continuation lines are indented (packaging/mangen joins them back).
const synopsisWidth = 100

// synopsis is the usage of the command of fs: keel NAME, its required
// flags (their usage ends in "(required)"), the others in brackets in the
// flag package's (alphabetical) order, and args. An alias (its usage says
// "same as --name") is left to the flag list. A flag is "-c" for a
// one-letter name, "--name" otherwise, followed by its argument: the
// choices of a choice flag (text|json), else the name the flag list shows
// (PATH, SIZE, duration); a repeatable flag is followed by "...".
func synopsis(fs *flag.FlagSet, args string) string {
	var required, optional []string
	fs.VisitAll(func(f *flag.Flag) {
		if strings.HasPrefix(f.Usage, "same as --") {
			return
		}
		word := "--" + f.Name
		if len(f.Name) == 1 {
			word = "-" + f.Name
		}
		argName, _ := flag.UnquoteUsage(f)
		if c, ok := f.Value.(*choiceFlag); ok {
			argName = strings.Join(c.choices, "|")
		}
		if argName != "" {
			word += " " + argName
		}
		if strings.HasSuffix(f.Usage, "(required)") {
			required = append(required, word)
			return
		}
		word = "[" + word + "]"
		if _, ok := f.Value.(*multiFlag); ok {
			word += "..."
		}
		optional = append(optional, word)
	})
	words := append(append([]string{"keel", fs.Name()}, required...), optional...)
	if args != "" {
		words = append(words, args)
	}
	var b strings.Builder
	line := len("usage: ")
	for i, w := range words {
		switch {
		case i == 0:
		case line+1+len(w) > synopsisWidth:
			b.WriteString("\n" + strings.Repeat(" ", 8))
			line = 8
		default:
			b.WriteString(" ")
			line++
		}
		b.WriteString(w)
		line += len(w)
	}
	return b.String()
}

// parseArgs parses a subcommand's flags. ok is false when the command must
// return code at once: exitOK after -h (the help on stdout), exitError
// after a bad flag or flag value (one line on stderr, see usageError).
func parseArgs(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	usage := fs.Usage
	fs.Usage = func() {} // the flag package calls it on every error
	fs.SetOutput(io.Discard)
	err := fs.Parse(flagsFirst(fs, args))
	fs.Usage = usage
	switch {
	case err == nil:
		return exitOK, true
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		return exitOK, false
	}
	return usageError(fs, stderr, "%s", strings.TrimPrefix(err.Error(), "flag provided but not defined: ")), false
}

// flagsFirst returns args with the flags moved before the positional
// arguments, so that flags typed after a name (keel wipe vg/lv --mode
// discard) are parsed as the flag package parses flags before it: the flag
// package stops at the first non-flag argument. The order of the flags and
// of the names is kept; "--" still ends the flags (what follows it is a
// name), and a flag's value (-c PATH, not -c=PATH) stays with its flag. A
// single "-" is a name, as in the flag package.
func flagsFirst(fs *flag.FlagSet, args []string) []string {
	var flags, names []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			names = append(names, args[i+1:]...)
			i = len(args)
		case len(a) < 2 || a[0] != '-':
			names = append(names, a)
		default:
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if strings.Contains(name, "=") {
				continue
			}
			f := fs.Lookup(name)
			if f == nil {
				continue // an unknown flag: Parse refuses it
			}
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				continue
			}
			if i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
		}
	}
	if len(names) == 0 {
		return flags
	}
	return append(append(flags, "--"), names...)
}

// usageError prints what is wrong with a command line, and where its help
// is, on one line; it returns exitError.
func usageError(fs *flag.FlagSet, stderr io.Writer, format string, args ...any) int {
	msg := fmt.Sprintf(format, args...)
	if strings.HasPrefix(msg, "-") && !strings.Contains(msg, " ") {
		msg = "unknown flag " + msg
	}
	fmt.Fprintf(stderr, "keel %s: %s; run 'keel help %s' for usage\n", fs.Name(), msg, fs.Name())
	return exitError
}

// noArgs is usageError for the first argument of a command that takes
// none; it returns exitOK when there is none.
func noArgs(fs *flag.FlagSet, stderr io.Writer) int {
	if fs.NArg() == 0 {
		return exitOK
	}
	return usageError(fs, stderr, "unexpected argument %q", fs.Arg(0))
}

// choiceFlag is a string flag that takes one of a fixed list of values, so
// that a wrong one is refused while the flags are parsed.
type choiceFlag struct {
	value   string
	choices []string
}

// choice registers a choiceFlag named name with default def (the first
// choice) and returns its value.
func choice(fs *flag.FlagSet, name, usage string, choices ...string) *string {
	c := &choiceFlag{value: choices[0], choices: choices}
	fs.Var(c, name, usage)
	return &c.value
}

// String implements flag.Value.
func (c *choiceFlag) String() string {
	if c == nil {
		return ""
	}
	return c.value
}

// Set implements flag.Value.
func (c *choiceFlag) Set(s string) error {
	if !slices.Contains(c.choices, s) {
		return fmt.Errorf("want %s", orList(c.choices))
	}
	c.value = s
	return nil
}

// orList joins words as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// desiredFlag registers -c, the desired-state path every command that reads
// the desired state takes.
func desiredFlag(fs *flag.FlagSet, configs *multiFlag) {
	fs.Var(configs, "c", "desired-state `PATH` (file or directory; repeatable; default "+schema.DefaultPath+")")
}

// loadErrorText says why command name could not load the desired state in
// configs: every problem of an invalid one (file:line:col: field: message),
// or, when no -c was given and the default path holds none, where else a
// desired state can come from.
func loadErrorText(name string, configs []string, err error) string {
	var invalid *schema.Error
	if errors.As(err, &invalid) {
		var b strings.Builder
		fmt.Fprintf(&b, "invalid desired state (%s):", plural(len(invalid.Problems), "problem"))
		for _, p := range invalid.Problems {
			b.WriteString("\n  " + p.String())
		}
		return b.String()
	}
	if len(configs) == 0 && errors.Is(err, fs.ErrNotExist) {
		msg := "no desired state in " + schema.DefaultPath + "; pass -c PATH"
		if name == "check" {
			msg += ", or --audit to judge the host against keel's reference rules"
		}
		return msg
	}
	return err.Error()
}

// probeErrorText says why the probe pass failed; a missing command is
// named with the package that installs it, not with its whole command line.
func probeErrorText(err error) string {
	if name, ok := hostio.MissingCommand(err); ok {
		pkg := map[string]string{"lvm": "lvm2", "lvmconfig": "lvm2", "dmsetup": "dmsetup"}[filepath.Base(name)]
		if pkg == "" {
			return fmt.Sprintf("%s is not installed (not found in PATH)", name)
		}
		return fmt.Sprintf("%s is not installed (not found in PATH): install the %s package (apt-get install %s)", name, pkg, pkg)
	}
	return err.Error()
}

// plural formats n with noun, adding an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// geteuid is os.Geteuid; the script tests replace it (KEEL_TEST_EUID) to
// run a mutating command as a user other than root.
var geteuid = os.Geteuid

// requireRoot refuses command name, run with args, before it touches
// anything when keel is not root: LVM, device-mapper and sysfs refuse a
// user, and keel would otherwise fail after its first lvm command. It
// prints the command line to retry with sudo and the read-only alternative,
// and reports whether keel may go on.
func requireRoot(name string, args []string, alternative string, stderr io.Writer) bool {
	euid := geteuid()
	if euid == 0 {
		return true
	}
	fmt.Fprintf(stderr, "keel %s: changes the host and must run as root (effective uid %d): run 'sudo %s', or %s\n",
		name, euid, shell.Join(append([]string{"keel", name}, args...)), alternative)
	return false
}

// hostName is the name keel prints for a host: the one it reported, or,
// when it has none (the kernel says "(none)" for an unset nodename,
// UTS_NODENAME in include/linux/uts.h), the node snapshot's file name
// without .txtar, or "unnamed" for this host.
func hostName(h *model.Host, node string) string {
	if h.Hostname != "" && h.Hostname != "(none)" {
		return h.Hostname
	}
	if node != "" {
		return strings.TrimSuffix(filepath.Base(node), ".txtar")
	}
	return "unnamed"
}
