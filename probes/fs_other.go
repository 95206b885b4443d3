//go:build !linux

package probes

// readDirect is Linux-only; elsewhere every read goes through the page cache.
func readDirect(string, int64, int) ([]byte, error) { return nil, errNoDirect }

// suspendedBlock is Linux-only: elsewhere no device is device-mapper's.
func suspendedBlock(string, string) bool { return false }
