package main

import (
	"os"
	"path/filepath"

	"github.com/keel-storage/keel/cmd/keel/internal/lvmcfgcache"
	"github.com/keel-storage/keel/internal/desiredcache"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/converge"
	"github.com/keel-storage/keel/reconcile/state/statefile"
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
	// envStateDir moves keel's state directory (converge.DefaultStateDir:
	// the state file, the last good desired state, removal checkpoints):
	// tests run keel in their own, never the host's.
	envStateDir = "KEEL_STATE_DIR"
)

// stateDir returns keel's state directory: KEEL_STATE_DIR, or
// converge.DefaultStateDir.
func stateDir() string {
	if d := os.Getenv(envStateDir); d != "" {
		return d
	}
	return converge.DefaultStateDir
}

// stateStore returns keel's state file in stateDir.
func stateStore() statefile.Store {
	return statefile.Store{Path: filepath.Join(stateDir(), filepath.Base(statefile.DefaultPath))}
}

// desiredCache returns the desired-state cache that KEEL_CACHE_DIR selects.
func desiredCache() *desiredcache.Cache {
	return desiredcache.Open(os.Getenv(envCacheDir))
}

// stateCache returns the desired-state cache of a live host's loop (run,
// apply, activate): in keel's state directory, which a reboot keeps, so
// that keel activate at boot skips the CUE evaluation beside lvm2's own
// activation (docs/boot.md), where /run's cache is always empty; or where
// KEEL_CACHE_DIR says ("off" turns it off). Nil when it is off.
func stateCache() converge.DesiredCache {
	dir := os.Getenv(envCacheDir)
	if dir == "" {
		dir = filepath.Join(stateDir(), desiredcache.StateSubdir)
	}
	if c := desiredcache.Open(dir); c != nil {
		return c
	}
	return nil
}

// withLVMConfigCache returns src with lvmconfig's answer taken from the
// cache that KEEL_CACHE_DIR selects (lvmcfgcache.ForNode).
func withLVMConfigCache(src hostio.Source, node string) hostio.Source {
	return lvmcfgcache.ForNode(src, node, lvmcfgcache.Options{CacheDir: os.Getenv(envCacheDir), Environ: os.Environ})
}
