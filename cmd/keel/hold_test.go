package main

import (
	"slices"
	"testing"
	"time"
)

// TestParseUntil: a date lasts through that day (UTC), as a waiver's
// expires does; an RFC 3339 time and a duration from now are taken as
// they are; anything else is refused.
func TestParseUntil(t *testing.T) {
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-12-05":           time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC),
		"2026-12-04T18:30:00Z": time.Date(2026, 12, 4, 18, 30, 0, 0, time.UTC),
		"8h":                   now.Add(8 * time.Hour),
	} {
		if got, err := parseUntil(in, now); err != nil || !got.Equal(want) {
			t.Errorf("parseUntil(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"tomorrow", "-1h", "2026-13-01"} {
		if _, err := parseUntil(bad, now); err == nil {
			t.Errorf("parseUntil(%q) accepted", bad)
		}
	}
}

// TestObjectLast: "keel hold bcache0 --reason …" parses as the flags then
// the object.
func TestObjectLast(t *testing.T) {
	if got := objectLast([]string{"bcache0", "--reason", "drain"}); !slices.Equal(got, []string{"--reason", "drain", "bcache0"}) {
		t.Errorf("objectLast: %q", got)
	}
	if got := objectLast([]string{"--reason", "drain", "bcache0"}); !slices.Equal(got, []string{"--reason", "drain", "bcache0"}) {
		t.Errorf("objectLast: %q", got)
	}
}
