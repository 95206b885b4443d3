// Package underfire holds the real-kernel test of keel.service under floods
// (kernel uevents, desired-state writes, a desired state flipping between
// valid and invalid), a slow PV (a delay table) and a PV that starts
// returning EIO (an error table) in the middle of a pass. See
// docs/reliability.md.
package underfire
