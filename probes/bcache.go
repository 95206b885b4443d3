package probes

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/keel-storage/keel/probes/model"
)

// bcacheBackingFiles are read from /sys/block/bcacheN/bcache/.
var bcacheBackingFiles = []string{
	"backing_dev_name", "backing_dev_uuid", "cache_mode", "dirty_data", "label", "readahead_cache_policy",
	"running", "sequential_cutoff", "state", "stop_when_cache_set_failed", "writeback_delay",
	"writeback_metadata", "writeback_percent", "writeback_rate", "writeback_rate_minimum",
	"writeback_rate_update_seconds", "writeback_rate_p_term_inverse", "writeback_rate_i_term_inverse",
	"writeback_running", "io_error_limit", "io_errors",
}

// cacheSetFiles are read from /sys/fs/bcache/<uuid>/.
var cacheSetFiles = []string{
	"average_key_size", "block_size", "bucket_size", "cache_available_percent",
	"congested_read_threshold_us", "congested_write_threshold_us", "errors", "io_error_halflife",
	"io_error_limit", "journal_delay_ms", "synchronous", "tree_depth",
}

// parseHumanBytes parses bcache's bch_hprint output ("4.0M", "0.0k", "512").
func parseHumanBytes(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty size")
	}
	mult := 1.0
	if i := strings.IndexByte("kMGTPEZY", s[len(s)-1]); i >= 0 {
		for range i + 1 {
			mult *= 1024
		}
		s = s[:len(s)-1]
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("size %q: not a number", s)
	}
	return uint64(v * mult), nil
}

// parseCacheMode returns the bracketed mode of "[writethrough] writeback ...".
func parseCacheMode(s string) (string, error) {
	i, j := strings.IndexByte(s, '['), strings.IndexByte(s, ']')
	if i < 0 || j < i {
		return "", fmt.Errorf("cache_mode %q: no [selected] mode", strings.TrimSpace(s))
	}
	return s[i+1 : j], nil
}

// selected returns the bracketed choice of a sysfs choice list, or the value
// itself when it has no brackets.
func selected(v string) string {
	if m, err := parseCacheMode(v); err == nil {
		return m
	}
	return v
}

// buildBcache turns the raw files of one backing device into a Bcache.
func buildBcache(dev string, files map[string]string, cacheLink string) *model.Bcache {
	b := &model.Bcache{Device: dev, Tunables: files, UUID: files["backing_dev_uuid"], Backing: files["backing_dev_name"],
		State: files["state"], Label: files["label"],
		ReadaheadCachePolicy:  selected(files["readahead_cache_policy"]),
		StopWhenCacheSetFails: selected(files["stop_when_cache_set_failed"])}
	if cacheLink != "" {
		b.CacheSet = path.Base(cacheLink)
	}
	bad := func(field string, err error) {
		b.Errors = append(b.Errors, fmt.Sprintf("bcache %s: %s: %v", dev, field, err))
	}
	if v, ok := files["cache_mode"]; ok {
		m, err := parseCacheMode(v)
		if err != nil {
			bad("cache_mode", err)
		}
		b.CacheMode = m
	}
	human := func(field string) uint64 {
		v, ok := files[field]
		if !ok {
			return 0
		}
		n, err := parseHumanBytes(v)
		if err != nil {
			bad(field, err)
		}
		return n
	}
	integer := func(field string) uint64 { return uintField(files, field, bad) }
	b.SequentialCutoff = human("sequential_cutoff")
	b.DirtyData = human("dirty_data")
	b.WritebackRate = human("writeback_rate")
	b.WritebackPercent = int(integer("writeback_percent"))
	b.WritebackDelay = int(integer("writeback_delay"))
	b.WritebackRateMinimum = integer("writeback_rate_minimum")
	b.WritebackRunning = files["writeback_running"] == "1"
	b.Running = files["running"] == "1"
	if b.UUID == "" {
		b.Errors = append(b.Errors, fmt.Sprintf("bcache %s: backing_dev_uuid missing", dev))
	}
	return b
}

// buildCacheSet turns the raw files of a cache set into a CacheSet.
func buildCacheSet(uuid string, files map[string]string) *model.CacheSet {
	c := &model.CacheSet{UUID: uuid, Tunables: files, ErrorsMode: selected(files["errors"]), Synchronous: files["synchronous"] == "1"}
	integer := func(field string) uint64 {
		return uintField(files, field, func(field string, err error) {
			c.Errors = append(c.Errors, fmt.Sprintf("cache set %s: %s: %v", uuid, field, err))
		})
	}
	c.CongestedReadThresholdUS = integer("congested_read_threshold_us")
	c.CongestedWriteThresholdUS = integer("congested_write_threshold_us")
	c.JournalDelayMS = integer("journal_delay_ms")
	return c
}

// uintField parses files[field] as a decimal; a missing field gives 0, a
// malformed one 0 and a call to bad.
func uintField(files map[string]string, field string, bad func(string, error)) uint64 {
	v, ok := files[field]
	if !ok {
		return 0
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		bad(field, err)
	}
	return n
}
