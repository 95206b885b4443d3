// Package smoke holds the e2e smoke scenarios that prove the test guest on
// the real storage stack: the VDO article's pool, a split pool whose journal
// moves, a thin pool, bcache tunables, and a VG on VDO across a reboot.
// The tests are behind the build tag e2e.
package smoke
