package bazinga

import "embed"

// WorkflowTemplates holds the example workflows of Action-only mode
// (examples/workflows/*.yml): `bazinga init --action` writes each of them to
// the repository's .github/workflows/ under its own name, whatever the
// examples directory holds.
//
//go:embed examples/workflows/*.yml
var WorkflowTemplates embed.FS

// WorkflowTemplateDir is the directory of WorkflowTemplates' files.
const WorkflowTemplateDir = "examples/workflows"

// ActionManifest is action.yml, the Action's definition: its inputs are
// read from it for `bazinga action -h`, so the help cannot drift from them.
//
//go:embed action.yml
var ActionManifest []byte
