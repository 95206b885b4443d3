package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/keel-storage/keel/probes"
)

func init() {
	register(command{name: "status", summary: "show the storage stack keel sees on this host (or in a node snapshot)", run: runStatus})
}

// runStatus prints the observed stack. Exit 0 when the probe pass worked,
// 1 for bad flags, 2 when a core command failed (what could be read is
// still printed).
func runStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	node := fs.String("node", "", "replay the node `SNAPSHOT` instead of probing this host")
	format := fs.String("format", "text", "output `format`: text or json")
	timeout := fs.Duration("timeout", 60*time.Second, "per-command timeout")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: keel status [--node SNAPSHOT] [--format text|json]")
		fs.PrintDefaults()
	}
	if code, ok := parseArgs(fs, args, exitFindings); !ok {
		return code
	}
	if fs.NArg() != 0 || (*format != "text" && *format != "json") {
		fs.Usage()
		return exitFindings
	}
	src, err := probes.NodeSource(*node, *timeout)
	if err != nil {
		fmt.Fprintf(stderr, "keel status: %v\n", err)
		return exitError
	}
	h, perr := probes.Probe(context.Background(), src)
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(h); err != nil {
			fmt.Fprintf(stderr, "keel status: %v\n", err)
			return exitError
		}
	} else {
		probes.WriteStatus(stdout, h)
	}
	if perr != nil {
		fmt.Fprintf(stderr, "keel status: %v\n", perr)
		return exitError
	}
	return exitOK
}
