// Package remedies proves on the real kernel that the remedies keel check
// prints work when typed, behind the build tag e2e. One machine, two boots:
// the first builds the states that raise vdo.slab_remainder,
// vdo.overcommit, vdo.threads and vdo.max_discard (a VDO pool with LVM's
// defaults, overcommitted, with a VG stacked on its VDO LV) and runs
// keel check --audit; the second runs each printed remedy exactly as
// printed, with bash, and checks after each one that keel check no longer
// raises that finding.
//
// Run: E2E_PKGS=./e2e/remedies e2e/run-e2e.sh
package remedies
