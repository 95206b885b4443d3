package main

import (
	"os"

	"github.com/keel-storage/keel/cmd/keel/internal/desiredcache"
	"github.com/keel-storage/keel/cmd/keel/internal/lvmcfgcache"
	"github.com/keel-storage/keel/probes/hostio"
)

// The environment variables keel reads. Only package main reads the
// environment and hands the values to the packages that need them
// (TestEnvironmentReadOnlyInMain).
const (
	// envCacheDir moves the caches of desired states and of lvmconfig's
	// answer to another directory; "off" turns them off (docs/check.md).
	envCacheDir = "KEEL_CACHE_DIR"
	// envTiming, when set, makes keel check print when each of its parts
	// ended (phases).
	envTiming = "KEEL_TIMING"
)

// desiredCache returns the desired-state cache that KEEL_CACHE_DIR selects.
func desiredCache() *desiredcache.Cache {
	return desiredcache.Open(os.Getenv(envCacheDir))
}

// withLVMConfigCache returns src with lvmconfig's answer taken from the
// cache that KEEL_CACHE_DIR selects (lvmcfgcache.ForNode).
func withLVMConfigCache(src hostio.Source, node string) hostio.Source {
	return lvmcfgcache.ForNode(src, node, lvmcfgcache.Options{CacheDir: os.Getenv(envCacheDir), Environ: os.Environ})
}
