package probes

import (
	"fmt"
	"io"
)

// WriteStatus writes a human-readable view of the host's storage stack.
func WriteStatus(w io.Writer, h *Host) {
	fmt.Fprintf(w, "host %s (kernel %s, %d CPUs)\n", h.Hostname, h.Kernel, h.CPUs)
}
