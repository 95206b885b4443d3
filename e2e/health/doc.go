//go:build e2e

// Package health proves on the real kernel that keel sees the layers under
// a declared pool that can fail without LVM's own commands failing: an
// LVM RAID LV or an md array under a PV with a failed or missing member, a
// PV on a device-mapper multipath map with failed paths (or given as one
// path instead of the map), and a VG shared through lvmlockd whose
// lockspace is not started. Each scenario is a script of its own run in a
// one-CPU guest; its test asserts the exact ok lines the script prints.
package health
