package pipeline

import "encoding/json"

// Result is an agent's compact return (DESIGN §5): a status, at most three
// summary lines, and a role-specific handoff for the next step.
type Result struct {
	Status  Status          `json:"status"`
	Summary []string        `json:"summary,omitempty"`
	Handoff json.RawMessage `json:"handoff,omitempty"`
}

// MaxSummaryLines is how many summary lines a result keeps.
const MaxSummaryLines = 3
