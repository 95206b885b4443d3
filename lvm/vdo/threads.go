package vdo

import (
	"fmt"
)

// Threads is a VDO thread layout (the dm-vdo table's ack, bio, cpu, hash,
// logical and physical keys; LVM's *_threads vdosettings).
type Threads struct {
	Logical  int `json:"logical"`
	Physical int `json:"physical"`
	Hash     int `json:"hash"`
	CPU      int `json:"cpu"`
	Bio      int `json:"bio"`
	Ack      int `json:"ack"`
}

// LVMDefaultThreads is what LVM gives a pool without vdosettings
// (lib/config/defaults.h): ten threads.
var LVMDefaultThreads = Threads{Logical: 1, Physical: 1, Hash: 1, CPU: 2, Bio: 4, Ack: 1}

// ReferenceThreads is the layout measured best on a 16-CPU host in the VDO
// article: one thread per CPU.
var ReferenceThreads = Threads{Logical: 4, Physical: 4, Hash: 2, CPU: 3, Bio: 2, Ack: 1}

// Thread limits from dm-vdo-target.c and slab-depot.c.
const (
	MaxThreads         = 100 // MAXIMUM_VDO_THREADS, for ack, bio, cpu and hash
	MaxLogicalZones    = 60  // MAX_VDO_LOGICAL_ZONES
	MaxPhysicalZones   = 16  // MAX_VDO_PHYSICAL_ZONES
	CacheBlocksPerZone = 2 * 2048
)

// Total is the number of threads in the layout.
func (t Threads) Total() int { return t.Logical + t.Physical + t.Hash + t.CPU + t.Bio + t.Ack }

// Validate checks a layout against the kernel's limits for a pool with
// slabs slabs and a block-map cache of cacheBlocks 4K blocks: logical
// 0..60, physical 0..16 and not above the slab count, hash 0..100, logical,
// physical and hash all zero or all non-zero, cpu and bio 1..100, ack
// 0..100, and at least 4096 cache blocks per logical zone.
func (t Threads) Validate(slabs uint64, cacheBlocks uint64) error {
	check := func(name string, v, lo, hi int) error {
		if v < lo || v > hi {
			return fmt.Errorf("vdo threads: %s=%d outside %d..%d", name, v, lo, hi)
		}
		return nil
	}
	for _, c := range []struct {
		name      string
		v, lo, hi int
	}{
		{"logical", t.Logical, 0, MaxLogicalZones},
		{"physical", t.Physical, 0, MaxPhysicalZones},
		{"hash", t.Hash, 0, MaxThreads},
		{"cpu", t.CPU, 1, MaxThreads},
		{"bio", t.Bio, 1, MaxThreads},
		{"ack", t.Ack, 0, MaxThreads},
	} {
		if err := check(c.name, c.v, c.lo, c.hi); err != nil {
			return err
		}
	}
	if (t.Logical == 0) != (t.Physical == 0) || (t.Logical == 0) != (t.Hash == 0) {
		return fmt.Errorf("vdo threads: logical=%d physical=%d hash=%d must be all zero or all non-zero",
			t.Logical, t.Physical, t.Hash)
	}
	if uint64(t.Physical) > slabs {
		return fmt.Errorf("vdo threads: physical=%d exceeds the pool's %d slabs", t.Physical, slabs)
	}
	if cacheBlocks < uint64(CacheBlocksPerZone*t.Logical) {
		return fmt.Errorf("vdo threads: logical=%d needs a block map cache of at least %d blocks (%d MiB), have %d blocks",
			t.Logical, CacheBlocksPerZone*t.Logical, CacheBlocksPerZone*t.Logical/256, cacheBlocks)
	}
	return nil
}

// AutoThreads is AutoThreadsCache with LVM's default 128 MiB block-map cache.
func AutoThreads(cpus int, slabs uint64) Threads {
	return AutoThreadsCache(cpus, slabs, DefaultBlockMapCacheBytes/BlockSize)
}

// threadWeights is ReferenceThreads as shares of 16 CPUs, in the order
// logical, physical, hash, cpu, bio, ack (also the tie-break order).
var threadWeights = [6]int{4, 4, 2, 3, 2, 1}

// AutoThreadsCache spreads one VDO thread per CPU across the thread types in
// the proportions of the article's 16-CPU layout (logical 4, physical 4,
// hash 2, cpu 3, bio 2, ack 1):
//
//   - cpus <= 4: no zone threads (logical, physical, hash 0; VDO then runs
//     the zones on one thread), cpu 1, bio 1, ack 1 from 3 CPUs, cpu 2 at 4.
//     At 1 or 2 CPUs the layout is cpu 1 and bio 1, the minimum, so it has
//     2 threads even on 1 CPU.
//   - cpus >= 5: each type gets the whole part of its share (weight x cpus
//     / 16), at least 1 (ack may be 0) and at most its limit: logical <= 60
//     and <= cache blocks / 4096 (8 with the default cache), physical <= 16
//     and <= the slab count, the others <= 100. CPUs left over go one at a
//     time to the type furthest below its share that is not at its limit
//     (ties in the order above); if the minimums overshoot, the type
//     furthest above its share gives one back.
//
// The total equals cpus for 2 <= cpus <= the sum of the limits (476 with
// many slabs and a large cache). At 16 CPUs the result is exactly the
// reference layout; at 32 it is 8/8/4/6/4/2, which is proportional, not the
// article's "twice that" (8/8/4/6/2/2), which measured worse.
func AutoThreadsCache(cpus int, slabs uint64, cacheBlocks uint64) Threads {
	switch {
	case cpus <= 2:
		return Threads{CPU: 1, Bio: 1}
	case cpus == 3:
		return Threads{CPU: 1, Bio: 1, Ack: 1}
	case cpus == 4:
		return Threads{CPU: 2, Bio: 1, Ack: 1}
	}
	logicalCap := min(MaxLogicalZones, int(min(cacheBlocks/CacheBlocksPerZone, MaxLogicalZones)))
	physicalCap := min(MaxPhysicalZones, int(min(slabs, MaxPhysicalZones)))
	caps := [6]int{max(logicalCap, 1), max(physicalCap, 1), MaxThreads, MaxThreads, MaxThreads, MaxThreads}
	mins := [6]int{1, 1, 1, 1, 1, 0}
	var a [6]int
	sum := 0
	for i, w := range threadWeights {
		a[i] = min(max(w*cpus/16, mins[i]), caps[i])
		sum += a[i]
	}
	// deficit(i) = share - a[i], compared as 16*deficit to stay in integers.
	deficit := func(i int) int { return threadWeights[i]*cpus - 16*a[i] }
	for sum < cpus {
		best := -1
		for i := range a {
			if a[i] < caps[i] && (best < 0 || deficit(i) > deficit(best)) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		a[best]++
		sum++
	}
	for sum > cpus {
		best := -1
		for i := range a {
			if a[i] > mins[i] && (best < 0 || deficit(i) < deficit(best)) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		a[best]--
		sum--
	}
	return Threads{Logical: a[0], Physical: a[1], Hash: a[2], CPU: a[3], Bio: a[4], Ack: a[5]}
}
