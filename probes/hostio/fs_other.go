//go:build !linux

package hostio

import "os"

// readFile is os.ReadFile; on Linux it makes fewer system calls.
func readFile(p string) ([]byte, error) { return os.ReadFile(p) }

// readDirNames is the names of os.ReadDir, unsorted; on Linux it makes
// fewer system calls.
func readDirNames(p string) ([]string, error) {
	ents, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, nil
}

// readDirect is Linux-only; elsewhere every read goes through the page cache.
func readDirect(string, int64, int) ([]byte, error) { return nil, errNoDirect }

// suspendedBlock is Linux-only: elsewhere no device is device-mapper's.
func suspendedBlock(string, string) bool { return false }
