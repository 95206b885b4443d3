// Package schema holds keel's desired-state schema (CUE, embedded in the
// binary), the loader that validates /etc/keel/*.cue against it, and the
// checks that CUE cannot express. A validated desired state decodes into
// the plain types of schema/spec, which is all the planner reads.
package schema

import "embed"

// FS holds the CUE schema as shipped: keel.cue (the definitions), root.cue
// (embeds #Config at the package root so that the cue CLI enforces it) and
// cue.mod/module.cue. `keel vet` and every command reading the desired state
// validate against these bytes; packaging installs the same files for
// `cue vet -c`.
//
//go:embed keel.cue root.cue cue.mod/module.cue
var FS embed.FS

// schemaFiles are the files of FS that form the CUE package, in load order.
var schemaFiles = []string{"keel.cue", "root.cue"}
