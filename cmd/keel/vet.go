package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/keel-storage/keel/schema"
)

func init() {
	register(command{
		name:    "vet",
		summary: "validate the desired state (files or a drop-in directory) against keel's schema",
		run:     runVet,
	})
}

// runVet implements `keel vet [-c PATH] [--print] [PATH ...]`: the schema,
// then keel's own checks (schema.check), which include sizes LVM can take
// and filter patterns in LVM's regex dialect (schema/lvmregex). Exit 0: valid;
// 1: invalid, every problem printed as file:line:col: path: message; 2: the
// desired state could not be read.
func runVet(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var configs multiFlag
	desiredFlag(fs, &configs)
	printEffective := fs.Bool("print", false, "print the effective desired state, every default filled in")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: keel vet [-c PATH] [--print] [PATH ...]")
		fmt.Fprintln(stderr, "\nValidates the desired state: files, or directories whose *.cue files are unified.")
		fmt.Fprintln(stderr, "Besides the schema: sizes LVM can take, VDO geometry, stacking, and global_filter")
		fmt.Fprintln(stderr, "patterns against LVM's own regex grammar (\\d, {n} and (?:...) are not LVM's).")
		fmt.Fprintln(stderr, "Exit status: 0 valid, 1 invalid (problems on stderr), 2 unreadable.")
		fs.PrintDefaults()
	}
	if code, ok := parseArgs(fs, args, exitError); !ok {
		return code
	}
	paths := append([]string(configs), fs.Args()...)
	d, err := schema.NewLoader().Load(paths...)
	var invalid *schema.Error
	switch {
	case errors.As(err, &invalid):
		fmt.Fprintln(stderr, invalid) // one file:line:col line per problem
		fmt.Fprintf(stderr, "keel vet: %d problem(s)\n", len(invalid.Problems))
		return exitFindings
	case err != nil:
		fmt.Fprintf(stderr, "keel vet: %v\n", err)
		return exitError
	}
	if *printEffective {
		b, err := d.Effective()
		if err != nil {
			fmt.Fprintf(stderr, "keel vet: %v\n", err)
			return exitError
		}
		stdout.Write(b)
	}
	return exitOK
}

// multiFlag is a repeatable string flag.
type multiFlag []string

// String implements flag.Value.
func (m *multiFlag) String() string { return fmt.Sprint([]string(*m)) }

// Set implements flag.Value.
func (m *multiFlag) Set(s string) error {
	*m = append(*m, s)
	return nil
}
