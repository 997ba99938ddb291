package agent

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/bazinga-bot/bazinga/config"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// A Driver knows one agent CLI: the command line it needs to work headless
// for a role, the environment it reads, how its output says what the final
// answer, the usage and the errors were, and what cannot work before a step
// runs. Adding a CLI is adding one driver file and its fixtures.
type Driver interface {
	// Name is the CLI's name as agent.cli spells it.
	Name() string
	// Invocation turns the user's command (split, placeholders filled) into
	// the step's command line and extra environment.
	Invocation(args []string, s Invoke) (Invocation, error)
	// Check lists what in the user's command (split, placeholders not yet
	// filled) cannot work, in words a user can act on.
	Check(args []string) []string
	// NewReader returns a reader for one step's standard output.
	NewReader() OutputReader
	// FinalAnswer says whether the CLI reports a final answer apart from
	// its transcript. When it does, the result is read from that answer
	// only (and the result file is not offered); when it does not, from
	// the result file, else the output.
	FinalAnswer() bool
}

// Access is what a role may do to the working copy, which a driver turns
// into the CLI's own permission flags where the CLI can express them.
type Access int

const (
	// AccessEdit: edit files in the working copy and run commands
	// (developer, senior engineer, requirements).
	AccessEdit Access = iota + 1
	// AccessRun: read and run commands (tests, diagnostics), no file edits
	// (QA, tech lead, investigator). What such a step changes is not kept.
	AccessRun
	// AccessRead: read the repository only (the pm).
	AccessRead
)

func (a Access) String() string {
	switch a {
	case AccessEdit:
		return "edit"
	case AccessRun:
		return "run"
	case AccessRead:
		return "read"
	}
	return fmt.Sprintf("Access(%d)", int(a))
}

// RoleAccess is what a role needs, and no more.
func RoleAccess(r pipeline.Role) Access {
	switch r {
	case pipeline.RoleDeveloper, pipeline.RoleSenior, pipeline.RoleRequirements:
		return AccessEdit
	case pipeline.RoleQA, pipeline.RoleTechLead, pipeline.RoleInvestigator:
		return AccessRun
	}
	return AccessRead
}

// Invoke is what a driver knows about one step when it builds the command.
type Invoke struct {
	Role   pipeline.Role
	Access Access
	Model  string
	// Dir is the step's own directory, outside the working copy: files the
	// driver passes to the CLI (a schema, the answer file) go there.
	Dir string
	// WorkDir is the working copy, where the CLI runs.
	WorkDir string
	// Schema is the JSON Schema of the role's result object.
	Schema []byte
	// MaxTurns and MaxBudgetUSD are caps passed to CLIs that take them (0: none).
	MaxTurns     int
	MaxBudgetUSD float64
	// Root is true when the harness runs as root (some CLIs refuse
	// unsandboxed modes then unless told they are in a sandbox).
	Root bool
	// Sandboxed is true on a throwaway machine (an Actions runner).
	Sandboxed bool
	// CacheDirs are where the toolchains keep their caches (~/.cache, and
	// GOCACHE, PIP_CACHE_DIR, … when passed to the agent elsewhere), which a
	// sandboxed CLI must let tests write.
	CacheDirs []string
	// OpenAIBaseURL, when set, is the OpenAI API base the step must use (bazinga's metering gateway): a CLI that
	// does not read OPENAI_BASE_URL gets it as configuration.
	OpenAIBaseURL string
}

// Invocation is the command line a driver built for one step.
type Invocation struct {
	Args []string
	// Env is set in the agent's environment on top of the harness's own.
	Env map[string]string
	// Files are written into Invoke.Dir before the run (name → content).
	Files map[string][]byte
	// AnswerFile, when set, is a file in Invoke.Dir the CLI writes its
	// final answer to; the reader gets it after the CLI exits.
	AnswerFile string
}

// OutputReader reads one step's standard output as it streams, one line at
// a time, keeping only what it needs: the output may be of any size.
type OutputReader interface {
	// Line is given each line without its newline. cut is true when the
	// line was longer than the harness keeps (its start is given).
	Line(line []byte, cut bool)
	// Finish is called once the output is closed; answerFile is the content
	// of Invocation.AnswerFile (nil when none or missing).
	Finish(answerFile []byte) Final
}

// rawOutputReader is an OutputReader that takes the output unsplit.
type rawOutputReader interface {
	OutputReader
	Write(p []byte) (int, error)
}

// Final is what a CLI's output said about the step.
type Final struct {
	// Answer is the CLI's final answer text; HasAnswer tells an empty
	// answer from none.
	Answer    string
	HasAnswer bool
	// Structured is the answer as the CLI validated it against the schema
	// (claude's structured_output), when it did.
	Structured json.RawMessage
	// Usage is what the CLI measured; UsageSource names the CLI.
	Usage       *pipeline.Usage
	UsageSource string
	// Failure is the CLI's own report that the run failed.
	Failure *CLIFailure
	// Denied lists the tool uses the CLI refused (permission denials).
	Denied []string
	Notes  []string
	// raw is the output itself, for CLIs without a final answer.
	raw []byte
}

// FailureKind is why a CLI run failed, as the CLI itself reported it.
type FailureKind int

const (
	FailureNone FailureKind = iota
	// FailureMaxTurns and FailureBudget: the CLI stopped itself at a cap.
	FailureMaxTurns
	FailureBudget
	// FailureOverloaded, FailureRateLimited and FailureAPI are model API
	// errors that outlasted the CLI's own retries; likely transient.
	FailureOverloaded
	FailureRateLimited
	FailureAPI
	// FailureAuth: the credentials were refused; retrying cannot help.
	FailureAuth
	// FailureQuota: the account is out of quota or credit.
	FailureQuota
	// FailureUsage: the CLI rejected its command line or configuration.
	FailureUsage
	// FailureExecution: the CLI failed during the run for another reason.
	FailureExecution
	// FailureNoAnswer: the CLI exited without reporting a final answer.
	FailureNoAnswer
	// FailureOutputCut: the final answer was longer than the harness reads.
	FailureOutputCut
	// FailureConflict: the output held more than one final answer, so
	// something other than the CLI wrote to it; none is trusted.
	FailureConflict
)

var failureKindNames = map[FailureKind]string{
	FailureNone: "none", FailureMaxTurns: "max_turns", FailureBudget: "budget",
	FailureOverloaded: "overloaded", FailureRateLimited: "rate_limited", FailureAPI: "api_error",
	FailureAuth: "auth", FailureQuota: "quota", FailureUsage: "usage", FailureExecution: "execution",
	FailureNoAnswer: "no_answer", FailureOutputCut: "output_cut", FailureConflict: "conflict",
}

func (k FailureKind) String() string {
	if s, ok := failureKindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("FailureKind(%d)", int(k))
}

// Transient says a later run may well succeed: the harness retries it after
// a wait.
func (k FailureKind) Transient() bool {
	return k == FailureOverloaded || k == FailureRateLimited || k == FailureAPI
}

// Permanent says another run would fail the same way: the session pauses
// at once naming it rather than spending attempts.
func (k FailureKind) Permanent() bool {
	return k == FailureAuth || k == FailureQuota || k == FailureUsage
}

// Stopped says the CLI stopped itself at a cap: its work so far is kept.
func (k FailureKind) Stopped() bool {
	return k == FailureMaxTurns || k == FailureBudget
}

// CLIFailure is a failed run as the CLI reported it.
type CLIFailure struct {
	Kind FailureKind
	// Message is the CLI's own words (one line, bounded).
	Message string
}

func (f *CLIFailure) String() string {
	if f == nil {
		return ""
	}
	return f.Message
}

// maxFailureMessage bounds a CLI's error text carried into notes and reasons.
const maxFailureMessage = 400

func newFailure(kind FailureKind, format string, args ...any) *CLIFailure {
	msg := strings.Join(strings.Fields(stripInvisible(fmt.Sprintf(format, args...))), " ")
	return &CLIFailure{Kind: kind, Message: capRunes(msg, maxFailureMessage)}
}

// drivers is every driver, by name.
var drivers = map[string]Driver{}

// driverOrder keeps listings independent of map order.
var driverOrder []string

func register(d Driver) {
	drivers[d.Name()] = d
	driverOrder = append(driverOrder, d.Name())
	slices.Sort(driverOrder)
}

// DriverNames lists the CLIs bazinga has drivers for, sorted.
func DriverNames() []string { return slices.Clone(driverOrder) }

// DriverFor returns the driver agent.cli names, or, when it names none
// ("" or "auto"), the one the command's program is recognised as
// (config.RecogniseCLI; anything else is generic).
func DriverFor(cli, command string) (Driver, error) {
	switch cli {
	case "", "auto":
		cli = string(config.RecogniseCLI(command))
	}
	if d, ok := drivers[cli]; ok {
		return d, nil
	}
	return nil, fmt.Errorf("agent.cli %q: no driver for it (known: %s)", cli, strings.Join(driverOrder, ", "))
}

// Flag helpers shared by the drivers. args is the command as split.

// hasFlag reports whether any of names is given, as "--x", "--x=v" or a
// short flag "-x".
func hasFlag(args []string, names ...string) bool {
	_, ok := flagValue(args, names...)
	return ok
}

// flagValue returns the value of the last of names given, with "--x v" or
// "--x=v"; a flag given without a value returns "".
func flagValue(args []string, names ...string) (string, bool) {
	val, found := "", false
	// A package runner's own flags (npx -y) are not the CLI's.
	for i := programEnd(args); i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		for _, n := range names {
			switch {
			case a == n:
				found, val = true, ""
				if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
					val = args[i+1]
				}
			case strings.HasPrefix(a, n+"="):
				found, val = true, a[len(n)+1:]
			}
		}
	}
	return val, found
}

// insertFlags puts extra flags right after the program and any leading
// subcommand words (those listed in sub), so that a trailing "--" or a
// positional prompt in the user's command stays last.
func insertFlags(args []string, sub []string, extra ...string) []string {
	at := programEnd(args) // after "npx <package>", not after "npx"
	for at < len(args) && slices.Contains(sub, args[at]) {
		at++
	}
	out := make([]string, 0, len(args)+len(extra))
	out = append(out, args[:at]...)
	out = append(out, extra...)
	return append(out, args[at:]...)
}
