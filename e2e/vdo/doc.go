// Package vdo holds the real-kernel proof of keel's VDO arithmetic
// (lvm/vdo), behind the build tag e2e: in one guest boot it creates pools
// of several sizes with the lvcreate lines keel generates and compares what
// vdoformat printed, what dm-vdo was loaded with and what vdolistmetadata
// lists with keel's numbers. A split pool is built and grown with keel's
// commands, and its recovery journal must sit on the fast PV afterwards.
//
// Run: go test -tags e2e -p 1 ./e2e/vdo/
package vdo
