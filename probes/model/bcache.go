package model

import "fmt"

// Bcache is one bcache backing device, keyed by its backing_dev_uuid.
type Bcache struct {
	UUID    string `json:"uuid"`    // backing_dev_uuid
	Device  string `json:"device"`  // bcacheN, informative only: it changes between boots
	Backing string `json:"backing"` // kernel name of the backing device (backing_dev_name)
	// BackingByID are the /dev/disk/by-id names of the backing device, sorted.
	BackingByID []string `json:"backingByID"`
	CacheSet    string   `json:"cacheSet"` // UUID of the attached cache set, "" when detached
	// CacheMode is the selected mode: writethrough, writeback, writearound or none.
	CacheMode             string `json:"cacheMode"`
	SequentialCutoff      uint64 `json:"sequentialCutoff"` // bytes
	WritebackPercent      int    `json:"writebackPercent"`
	WritebackDelay        int    `json:"writebackDelay"`       // seconds
	WritebackRunning      bool   `json:"writebackRunning"`     // writeback_running
	WritebackRate         uint64 `json:"writebackRate"`        // bytes/s as read
	WritebackRateMinimum  uint64 `json:"writebackRateMinimum"` // sectors/s
	State                 string `json:"state"`                // no cache, clean, dirty, inconsistent
	DirtyData             uint64 `json:"dirtyData"`            // bytes
	Running               bool   `json:"running"`
	Label                 string `json:"label"`
	ReadaheadCachePolicy  string `json:"readaheadCachePolicy"`
	StopWhenCacheSetFails string `json:"stopWhenCacheSetFails"`
	// Tunables holds every file read from the bcache directory, raw and trimmed.
	Tunables map[string]string `json:"tunables"`
	Errors   []string          `json:"errors"`
}

// CacheSet is a bcache cache set from /sys/fs/bcache/<uuid>.
type CacheSet struct {
	UUID                      string   `json:"uuid"`
	CongestedReadThresholdUS  uint64   `json:"congestedReadThresholdUS"`
	CongestedWriteThresholdUS uint64   `json:"congestedWriteThresholdUS"`
	JournalDelayMS            uint64   `json:"journalDelayMS"`
	ErrorsMode                string   `json:"errorsMode"` // errors: unregister or panic
	Synchronous               bool     `json:"synchronous"`
	CacheDevices              []string `json:"cacheDevices"` // kernel names of the cache devices
	// Tunables holds every file read from the set directory, raw and trimmed.
	Tunables map[string]string `json:"tunables"`
	Errors   []string          `json:"errors"`
}

// Hprint formats v as the kernel's bch_hprint (drivers/md/bcache/util.c)
// does, the form bcache's sysfs reads back sizes and rates in: divide by
// 1024 at least once and while the quotient has more than three digits, and
// print one decimal digit taken from the last remainder, truncated, with
// units k, M, G, T, P, E, Z, Y; e.g. 0 → "0.0k", 4194304 → "4.0M".
func Hprint(v int64) string {
	const units = "?kMGTPEZY"
	q := uint64(v)
	if v < 0 {
		q = uint64(-v)
	}
	u, t := 0, uint64(0)
	for {
		u++
		t = q & 1023
		q >>= 10
		if q < 1000 {
			break
		}
	}
	sign := ""
	if v < 0 {
		sign = "-"
	}
	return fmt.Sprintf("%s%d.%d%c", sign, q, t*10/1024, units[u])
}
