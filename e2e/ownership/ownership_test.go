//go:build e2e

// Package ownership_test runs, on the real kernel, the scenarios in which
// an LV the desired state lists in absent is not keel's to remove: a name
// reused after the audit-first rollout recorded it (rollout.sh), a VG of
// the declared name that is another VG (foreignvg.sh), a disk a guest's
// configuration still names (guestref.sh), and storage other nodes may
// use (sharedcfg.sh). Each keeps the LV with its data and says why. On a
// VG shared between nodes no other change is made either (sharedgate.sh). They
// share e2e/wipe's helpers (wipelib.sh); they are a package of their own
// so that run-e2e.sh can run them beside e2e/wipe.
package ownership_test

import (
	"testing"

	"github.com/keel-storage/keel/e2e/guest"
)

// shareFiles reads the named files of this directory, with e2e/wipe's
// wipelib.sh, for a scenario's share.
func shareFiles(t *testing.T, names ...string) map[string][]byte {
	t.Helper()
	return guest.ShareFiles(t, append([]string{"../wipe/wipelib.sh"}, names...)...)
}
