package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/keel-storage/keel/schema"
)

// runVet implements `keel vet [-c PATH] [--print] [PATH ...]`: the schema,
// then keel's own checks (schema.check), which include sizes LVM can take
// and filter patterns in LVM's regex dialect (lvm/lvmregex). Exit 0:
// valid; 2: invalid (every problem printed as file:line:col: path:
// message), missing or unreadable, or bad flags.
func runVet(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("vet", "[PATH ...]",
		"Validates the desired state: files, or directories whose *.cue files are unified.",
		"Besides the schema: sizes LVM can take, VDO geometry, stacking, and global_filter",
		"patterns against LVM's own regex grammar (\\d, {n} and (?:...) are not LVM's).",
		"Exit status: 0 valid, 2 invalid (each problem on stderr as file:line:col: field: message),",
		"missing or unreadable, or bad flags.")
	var configs multiFlag
	desiredFlag(fs, &configs)
	printEffective := fs.Bool("print", false, "print the effective desired state, every default filled in")
	if code, ok := parseArgs(fs, args, stdout, stderr); !ok {
		return code
	}
	paths := append([]string(configs), fs.Args()...)
	d, err := schema.NewLoader().Load(paths...)
	var invalid *schema.Error
	switch {
	case errors.As(err, &invalid):
		fmt.Fprintln(stderr, invalid) // one file:line:col line per problem
		fmt.Fprintf(stderr, "keel vet: %s\n", plural(len(invalid.Problems), "problem"))
		return exitError
	case err != nil:
		fmt.Fprintf(stderr, "keel vet: %s\n", loadErrorText("vet", paths, err))
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
