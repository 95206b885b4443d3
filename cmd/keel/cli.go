package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"

	"github.com/keel-storage/keel/schema"
)

// Exit codes shared by every subcommand. Subcommands document any extra
// meaning they give to 1.
const (
	exitOK       = 0 // success, or nothing at warning or above
	exitFindings = 1 // invalid input, or findings at warning or above
	exitError    = 2 // keel could not do its job (unreadable input, failed probe)
)

// command is one keel subcommand.
type command struct {
	name    string
	summary string
	// run executes the subcommand with its own arguments and returns the exit code.
	run func(args []string, stdout, stderr io.Writer) int
}

var commands = map[string]command{}

// register adds a subcommand to the table; it is called from init in the
// file that implements the subcommand.
func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("keel: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// Version is set at build time with -ldflags "-X main.Version=...".
var Version = "dev"

// Main runs keel with the given arguments (without the program name) and
// returns the process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return exitError
		}
		return exitOK
	}
	if args[0] == "version" || args[0] == "--version" {
		fmt.Fprintf(stdout, "keel %s\n", Version)
		return exitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "keel: unknown command %q (see 'keel help')\n", args[0])
		return exitError
	}
	return c.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "keel: declarative storage agent for Linux hypervisors (LVM-VDO, dm-thin, bcache, lvm.conf)")
	fmt.Fprintln(w, "\nusage: keel <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "  %-10s %s\n", "version", "print keel's version")
	fmt.Fprintln(w, "\nRun 'keel <command> -h' for a command's flags.")
}

// parseArgs parses a subcommand's flags. ok is false when the command must
// return code at once: exitOK after -h, bad otherwise (the flag package has
// already printed the problem and the usage).
func parseArgs(fs *flag.FlagSet, args []string, bad int) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		return exitOK, false
	default:
		return bad, false
	}
}

// desiredFlag registers -c, the desired-state path every command that reads
// the desired state takes.
func desiredFlag(fs *flag.FlagSet, configs *multiFlag) {
	fs.Var(configs, "c", "desired-state `PATH` (file or directory; repeatable; default "+schema.DefaultPath+")")
}
