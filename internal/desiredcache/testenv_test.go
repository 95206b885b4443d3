package desiredcache

// Every test binary takes the -update flag of internal/testenv, so that
// go test ./... -update runs.
import _ "github.com/keel-storage/keel/internal/testenv"
