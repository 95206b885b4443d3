// Command keel is a declarative, reconciling node agent for the block-storage
// stack of Linux hypervisors: LVM-VDO pools, dm-thin pools, bcache and lvm.conf.
//
// Each subcommand lives in its own file and registers itself in the command
// table with register; main only dispatches.
package main

import (
	"os"
)

func main() {
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}
