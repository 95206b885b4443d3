// Package remedies proves on the real kernel that the remedies keel check
// prints work when typed, behind the build tag e2e. In one boot it builds
// the states that raise vdo.slab_remainder, vdo.overcommit, vdo.threads and
// vdo.max_discard (a VDO pool with LVM's defaults, overcommitted, with a VG
// stacked on its VDO LV), and for each finding in turn takes the remedy
// keel check --audit prints, runs it exactly as printed with bash, and
// checks that keel check no longer raises that finding. Then it leaves a
// thin pool declared in the stacked VG inactive, as a boot does, and does
// the same for activation.pvscan_on_lvs, checking that the remedy leaves the
// VM disk next to the pool inactive.
//
// TestThinPoolInactiveTable, in a boot of its own, builds the state an
// lvcreate --type thin-pool killed between the pool's table load and its
// resume leaves (the pool's device with an inactive table only, holding
// _tdata and _tmeta open) and checks that vg.inactive's printed remedy, and
// then keel apply, bring the pool up; then the same for a pool in use, whose
// table sits in its -tpool layer, by the remedy alone.
//
// Run: E2E_PKGS=./e2e/remedies e2e/run-e2e.sh
package remedies
