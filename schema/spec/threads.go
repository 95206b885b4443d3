package spec

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/keel-storage/keel/lvm/vdo"
)

// UnmarshalJSON reads the CUE form of threads: the string "auto" or an object
// with the six counts.
func (t *Threads) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("threads: %w", err)
		}
		if s != "auto" {
			return fmt.Errorf("threads: %q is neither \"auto\" nor an object with the six counts", s)
		}
		*t = Threads{Auto: true}
		return nil
	}
	var c vdo.Threads
	if err := json.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("threads: %w", err)
	}
	*t = Threads{Threads: c}
	return nil
}

// MarshalJSON writes "auto" for an automatic layout and the six counts
// otherwise, so that the effective desired state reads like its source.
func (t Threads) MarshalJSON() ([]byte, error) {
	if t.Auto {
		return []byte(`"auto"`), nil
	}
	return json.Marshal(t.Threads)
}
