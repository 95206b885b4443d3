package main

import (
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/keel-storage/keel/probes/hostio"
)

// liveOptions reads, from the environment, how a live Source serves the
// device-mapper reads: KEEL_DM_IOCTL=off runs dmsetup for each of them, and
// KEEL_LOG_LEVEL=debug (or trace) logs on stderr how each was served. The
// library reads no environment; the command hands it these.
func liveOptions() hostio.LiveOptions {
	opt := hostio.LiveOptions{NoDMIoctl: os.Getenv("KEEL_DM_IOCTL") == "off"}
	if lvl := hclog.LevelFromString(os.Getenv("KEEL_LOG_LEVEL")); lvl != hclog.NoLevel && lvl <= hclog.Debug {
		opt.DMLog = hclog.New(&hclog.LoggerOptions{Name: "keel.probes", Level: lvl, Output: os.Stderr})
	}
	return opt
}
