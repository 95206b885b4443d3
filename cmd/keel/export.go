package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/atomicfile"
	"github.com/keel-storage/keel/reconcile/plan"
)

// runExport writes the desired state of the host as it is (reconcile.Export)
// with what it leaves out as comments at the top. Exit 0 when written, 2
// when it could not (bad flags, a probe or write failure). It reads
// only; the file it writes is for a person to review before it goes to
// /etc/keel.
func runExport(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("export", "",
		"Writes a desired state (CUE) that describes this host as it is: lvm.conf's devices settings,",
		"every VG with its VDO and thin pools, every bcache device with its tunables. keel check against",
		"it on the same host reports no setting as drift. Review it before committing it to /etc/keel.",
		"Exit status: 0 written, 2 could not (bad flags, the host could not be probed, write error).")
	out := fs.String("o", "", "write the desired state to `FILE` (default standard output)")
	node := fs.String("node", "", "export the node `SNAPSHOT` instead of this host")
	timeout := fs.Duration("timeout", 60*time.Second, "per-command timeout of the probe")
	if code, ok := parseArgs(fs, args, stdout, stderr); !ok {
		return code
	}
	if code := noArgs(fs, stderr); code != exitOK {
		return code
	}
	src, err := hostio.NodeSource(*node, *timeout, liveOptions())
	if err != nil {
		fmt.Fprintf(stderr, "keel export: %v\n", err)
		return exitError
	}
	h, err := probes.Probe(context.Background(), src)
	if err != nil {
		fmt.Fprintf(stderr, "keel export: %s\n", probeErrorText(err))
		return exitError
	}
	ex := plan.Export(h)
	var b strings.Builder
	fmt.Fprintf(&b, "// Desired state of host %s as it was when keel export (keel %s) read it.\n", h.Hostname, Version)
	b.WriteString("// Review it before committing it to /etc/keel: it declares what the host has, not what it\n")
	b.WriteString("// should have (keel check --audit says what the reference rules would change). Nothing in it\n")
	b.WriteString("// lets keel create or remove anything: create is never set, no LV is listed absent.\n")
	for _, n := range ex.Notes {
		fmt.Fprintf(&b, "//\n// NOTE: %s\n", n)
	}
	b.WriteString("\n")
	b.WriteString(ex.Text)
	if *out == "" {
		if _, err := io.WriteString(stdout, b.String()); err != nil {
			fmt.Fprintf(stderr, "keel export: %v\n", err)
			return exitError
		}
		return exitOK
	}
	if err := atomicfile.Write(*out, []byte(b.String()), 0o644); err != nil {
		fmt.Fprintf(stderr, "keel export: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stderr, "keel export: wrote %s (%d notes); check it with keel vet -c %s and keel check -c %s\n", *out, len(ex.Notes), *out, *out)
	return exitOK
}
