package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
)

// runStatus prints the observed stack. Exit 0 when the probe pass worked,
// 2 for bad flags or when a core command failed (what could be read is
// still printed).
func runStatus(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("status", "",
		"Shows the storage stack keel sees: each VG with its PVs (fast or slow), VDO pools with where",
		"their index and journal sit, thin pools, LVs, fill levels, bcache devices and lvm.conf.",
		"It judges nothing: keel check compares the host with the desired state.",
		"-o, --noheadings, --separator or -a print the LVs as lvs prints them instead, one per line:",
		"-o takes lvs's field names (keel status -o lv_name,lv_size; -o +lv_role adds to lvs's default",
		"columns), and an unknown name is refused with the list of those keel reads.",
		"Exit status: 0 shown, 2 could not probe (bad flags, a core command failed; what could be",
		"read is still shown).")
	node := fs.String("node", "", "replay the node `SNAPSHOT` instead of probing this host")
	format := choice(fs, "format", "output `format`: text or json", "text", "json")
	timeout := fs.Duration("timeout", 60*time.Second, "per-command timeout")
	columns := fs.String("o", "", "report the LVs as lvs does, in the `FIELDS` given (lvs's names, comma-separated; +FIELDS adds to lvs's default ones)")
	noHeadings := fs.Bool("noheadings", false, "LV report without its heading line")
	separator := fs.String("separator", "", "LV report with its columns joined by `SEP`, unaligned")
	all := fs.Bool("a", false, "LV report with the hidden LVs too, in brackets, as lvs -a")
	if code, ok := parseArgs(fs, args, stdout, stderr); !ok {
		return code
	}
	if code := noArgs(fs, stderr); code != exitOK {
		return code
	}
	report := *columns != "" || *noHeadings || *separator != "" || *all
	if report && *format == "json" {
		return usageError(fs, stderr, "-o, --noheadings, --separator and -a make a text report; they do not combine with --format json")
	}
	src, err := hostio.NodeSource(*node, *timeout, liveOptions())
	if err != nil {
		fmt.Fprintf(stderr, "keel status: %v\n", err)
		return exitError
	}
	src = withLVMConfigCache(src, *node)
	h, perr := probes.Probe(context.Background(), src)
	if _, missing := hostio.MissingCommand(perr); missing {
		// Without lvm2 (or dmsetup) there is no stack to show: the one line
		// that names the package, not the probe's command lines.
		fmt.Fprintf(stderr, "keel status: %s\n", probeErrorText(perr))
		return exitError
	}
	if report {
		r := lvsReport{columns: lvsDefaultColumns, noHeadings: *noHeadings, separator: *separator, all: *all}
		if *columns != "" {
			cols, err := parseColumns(*columns, lvFieldNames(h))
			if err != nil {
				return usageError(fs, stderr, "-o: %v", err)
			}
			r.columns = cols
		}
		r.write(stdout, h)
	} else if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // "<max discard>" as lvm.conf has it
		model.EmptyLists(h)
		// The holds of this host's keel state, as the text shows them; a
		// replayed snapshot has none recorded, and no "holds" key.
		out := struct {
			*model.Host
			Holds map[string]heldJSON `json:"holds,omitzero"`
		}{Host: h}
		if *node == "" {
			out.Holds = map[string]heldJSON{}
			if st, err := stateStore().Load(); err == nil {
				out.Holds = holdsJSON(st.Holds, time.Now())
			}
		}
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(stderr, "keel status: %v\n", err)
			return exitError
		}
	} else {
		shown := *h
		shown.Hostname = hostName(h, *node)
		model.WriteStatus(stdout, &shown)
		if *node == "" {
			writeHolds(stdout, time.Now())
		}
	}
	if perr != nil {
		fmt.Fprintf(stderr, "keel status: %s\n", probeErrorText(perr))
		return exitError
	}
	return exitOK
}
