//go:build !linux

package executor

// LVMLockHeld is Linux-only (LVM runs there): elsewhere no lock is held.
func LVMLockHeld(string) func(vg string) (bool, error) {
	return func(string) (bool, error) { return false, nil }
}
