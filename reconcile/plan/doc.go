// Package reconcile compares a host's desired storage stack with what the
// host reports and says, in stable terms, what differs and what to do.
//
// The planner (Plan) is a pure function from (desired, observed) to findings
// and actions: it runs no command, reads no file and reads no clock. The
// executor (sub-package executor) applies actions with timeouts, rate limits
// and a stop on actions that do not converge, re-probing the host after each
// one: the diff is always against what the host reports, never against
// keel's memory of what it did.
package plan
