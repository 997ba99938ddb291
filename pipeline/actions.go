package pipeline

// Action is an effect for a front-end to carry out. Its ID is stable: the same
// session and events give the same ids, and carrying out an action twice must
// do nothing more than once (a step already claimed is a duplicate).
type Action struct {
	ID    string     `json:"id"`
	Kind  ActionKind `json:"kind"`
	Group string     `json:"group,omitempty"`
	// Step is the step to dispatch or cancel.
	Step    string  `json:"step,omitempty"`
	Role    Role    `json:"role,omitempty"`
	Model   string  `json:"model,omitempty"`
	Purpose Purpose `json:"purpose,omitempty"`
	Attempt int     `json:"attempt,omitempty"`
	// Notice and Text are set for ActionNotify, ActionPause, ActionComplete and ActionReport.
	Notice NoticeKind `json:"notice,omitempty"`
	Text   string     `json:"text,omitempty"`
	// Status is the session status an ActionComplete ends with.
	Status SessionStatus `json:"status,omitempty"`
}
