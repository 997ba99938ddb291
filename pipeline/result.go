package pipeline

import "encoding/json"

// Result is an agent's compact return (ARCHITECTURE.md §5): a status, at most three
// summary lines, and a role-specific handoff for the next step.
type Result struct {
	Status  Status          `json:"status"`
	Summary []string        `json:"summary,omitempty"`
	Handoff json.RawMessage `json:"handoff,omitempty"`
	// Findings are the review findings of QA, the tech lead and the
	// investigator (issue 26), bounded by BoundFindings.
	Findings []Finding `json:"findings,omitempty"`
}

// MaxSummaryLines is how many summary lines a result keeps.
const MaxSummaryLines = 3
