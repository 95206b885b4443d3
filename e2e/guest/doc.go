// Package guest boots keel's qemu test guest (a stock Debian trixie kernel
// with LVM, dm-vdo, dm-thin and bcache) from Go tests and returns what the
// scenario inside it printed and wrote.
//
// Everything except this file is behind the build tag e2e, so a plain
// `go test ./...` never boots a guest. Tests that use the package carry the
// same tag and run with `go test -tags e2e -p 1 ./e2e/...` (see
// docs/testing.md). The guest image is built and cached by
// e2e/image/build.sh; each boot goes through e2e/vm-run.sh, which serialises
// guests machine-wide with flock on /tmp/keel-qemu.lock.
package guest
