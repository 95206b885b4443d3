// Package faults raises, on a real kernel, the findings that only a failing
// or starved host produces: a VDO pool turned read-only by a PV that returns
// EIO (vdo.mode), its UDS index closed (vdo.index), and VDO pools whose RAM
// bill exceeds the host's memory (vdo.memory), vdo.dedupe_timeouts; and a
// thin pool whose metadata writes land 12 s late, which keel check must
// read without waiting (its status read carries DM_NOFLUSH_FLAG). The PV sits on a device-mapper
// device whose table is swapped between linear, delay and error, as lvm2's
// own test suite does with its error and delay devices. One guest boot runs
// scenario.sh; faults_test.go asserts the exact finding IDs of every phase.
// With KEEL_FAULTS_SNAPSHOT_DIR set, the phases' node snapshots are copied
// there (reconcile/plan/testdata/snapshots/fault-*.txtar are such captures).
package faults
