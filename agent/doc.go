// Package agent runs one agent step (ARCHITECTURE.md §4, §5): it builds the step's
// prompt from an embedded role template, the group's task and the previous
// step's compact handoff (BuildPrompt); runs the configured agent command in
// the step's working copy with a minimal environment, a timeout over the whole
// process group and capped output (Runner); and reads the agent's compact
// result from its result file or its output (ParseResult).
//
// The package decides nothing about routing: the pipeline does that with the
// Parsed result and the Outcome's NoResult, TimedOut and ExitCode.
package agent
