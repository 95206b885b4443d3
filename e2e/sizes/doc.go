//go:build e2e

// Package sizes proves on the real kernel that keel keeps the declared
// sizes of what it manages after creation, in one guest boot (grow.sh): a
// thin pool found at half its declared size is grown by keel apply, a PV
// whose loop device grew under it is pvresized, and a declared PV not yet
// in the VG is added with vgextend after keel's blank check. In the same
// boot (autoextend.sh), a thin pool with an autoextend policy is grown by
// dmeventd through the LVM profile keel attaches, and stops at its
// declared maximum.
package sizes
