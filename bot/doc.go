// Package bot is bazinga's orchestrator on GitHub (ARCHITECTURE.md §6): it turns one
// delivery (a webhook event, or the event of an Action-only run) into engine
// events, reconciles the session, writes the state with its pending effects
// and carries them out. One session's turn goes through the phases of drive
// (drive.go): admit, decide, settle, narrate, commit.
//
// It sits between two packages it does not own: ghapi (the GitHub API in our
// own types) and codec (the blocks hidden in comments: state, results,
// events). The HTTP front (package server) and the Action-only orchestrator
// (package action) feed it; neither holds any of its logic.
package bot
