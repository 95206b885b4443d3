package model

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Diff compares two observed models and returns up to limit differing lines
// of their indented JSON forms ("-" from a, "+" from b); nil means equal.
func Diff(a, b *Host, limit int) ([]string, error) {
	ja, err := json.MarshalIndent(a, "", " ")
	if err != nil {
		return nil, fmt.Errorf("diff: %w", err)
	}
	jb, err := json.MarshalIndent(b, "", " ")
	if err != nil {
		return nil, fmt.Errorf("diff: %w", err)
	}
	if string(ja) == string(jb) {
		return nil, nil
	}
	la, lb := strings.Split(string(ja), "\n"), strings.Split(string(jb), "\n")
	var out []string
	for i := 0; i < max(len(la), len(lb)) && len(out) < limit; i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			out = append(out, fmt.Sprintf("line %d: -%s", i+1, strings.TrimSpace(x)), fmt.Sprintf("line %d: +%s", i+1, strings.TrimSpace(y)))
		}
	}
	return out, nil
}
