package hostio

// Commands of a probe pass, as the tests of this package run them.
var (
	dmTableCmd    = Cmd{Name: "dmsetup", Args: []string{"table"}, ReadOnly: true}
	dmStatusCmd   = Cmd{Name: "dmsetup", Args: []string{"status"}, ReadOnly: true}
	lvmConfigCmd  = Cmd{Name: "lvmconfig", Args: []string{"--typeconfig", "full"}, ReadOnly: true}
	fullReportCmd = Cmd{Name: "lvm", Args: []string{"fullreport", "--reportformat", "json"}, ReadOnly: true}
)
