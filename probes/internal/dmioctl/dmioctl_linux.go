package dmioctl

import (
	"errors"
	"os"
	"syscall"
	"unsafe"
)

// Read produces what `dmsetup <kind>` prints (see Format) through the
// ioctls on the control node.
func Read(control, kind, dev string) ([]byte, error) {
	f, err := os.OpenFile(control, os.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Format(IoctlCaller(f.Fd()), kind, dev)
}

// IoctlCaller returns a Caller that issues the ioctls on fd, doubling the
// buffer (from libdevmapper's 16 KiB) while the kernel reports it full. Its
// calls share one buffer: with a buffer per call, each poll of the idle
// daemon (PoolStatusKey) allocated 16 KiB per device, enough for the
// runtime to collect more often than the collection it forces every 2
// minutes (docs/benchmark-history.md).
func IoctlCaller(fd uintptr) Caller {
	var buf []byte
	return func(req uint32, version [3]uint32, name string, flags uint32, payload []byte) ([]byte, error) {
		for n := dmBufferStart; n <= dmBufferMax; n *= 2 {
			if cap(buf) < n {
				buf = make([]byte, n)
			}
			b, err := dmRequestIn(buf[:n], version, name, flags, payload)
			if err != nil {
				return nil, err
			}
			if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, uintptr(req), uintptr(unsafe.Pointer(&b[0]))); e != 0 {
				return nil, e
			}
			if ne.Uint32(b[offFlags:])&dmFlagBufferFull == 0 {
				return b, nil
			}
		}
		return nil, errors.New("reply larger than the biggest buffer")
	}
}
