// Package kill is the kill loop of #17 on a real kernel: in one boot of the
// test guest, scenario.sh makes the host need work again and again (lvm.conf
// and keel's udev rules changed, a thin and a VDO pool removed, a split VDO
// pool's journal moved off its fast PV, LVs declared absent), starts keel
// apply under killer and SIGKILLs it at a random point of one kind of step,
// then runs a fresh keel apply and checks that it converged with lvm.conf
// valid and whole, the data of the LVs that stay intact, no del-* LV and no
// pvmove left, and no destructive command run twice on one LV. Before the
// loop it makes the leftover of a pvmove that stopped between the two commits
// of its finish (vg.pvmove_orphan) and an LV left suspended (dm.suspended),
// and checks that one keel apply clears each.
// KEEL_KILL_ITERATIONS sets the count (default: one per kind of step; run-e2e.sh sets 2),
// KEEL_KILL_SEED the kill points. See docs/reliability.md.
package kill
