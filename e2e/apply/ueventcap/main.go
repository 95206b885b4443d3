// Command ueventcap records raw kernel uevents (NETLINK_KOBJECT_UEVENT,
// multicast group 1) into numbered files, one datagram each, until it is
// killed or -n datagrams have arrived. It runs inside the test guest to
// capture the bytes keel's uevent parser is tested with.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

func main() {
	dir := flag.String("o", ".", "directory for uevent-NNN.bin files")
	max := flag.Int("n", 1000, "stop after this many datagrams")
	flag.Parse()
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_KOBJECT_UEVENT)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ueventcap: socket:", err)
		os.Exit(2)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: 1}); err != nil {
		fmt.Fprintln(os.Stderr, "ueventcap: bind:", err)
		os.Exit(2)
	}
	fmt.Println("ueventcap: listening")
	buf := make([]byte, 64<<10)
	for i := 0; i < *max; i++ {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, "ueventcap: recv:", err)
			os.Exit(2)
		}
		name := filepath.Join(*dir, fmt.Sprintf("uevent-%03d.bin", i))
		if err := os.WriteFile(name, buf[:n], 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "ueventcap:", err)
			os.Exit(2)
		}
	}
}
