package pipeline

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Config is the parsed form of .github/bazinga.yml (ARCHITECTURE.md §8). Every key is
// optional; DefaultConfig gives the values used when a key is absent.
type Config struct {
	Agent                AgentConfig  `json:"agent"`
	Models               ModelsConfig `json:"models"`
	Tests                TestsConfig  `json:"tests"`
	Build                BuildConfig  `json:"build"`
	MaxParallel          int          `json:"max_parallel"`
	QA                   bool         `json:"qa"`
	Merge                MergeConfig  `json:"merge"`
	ClarificationTimeout Duration     `json:"clarification_timeout"`
	AllowWorkflowChanges bool         `json:"allow_workflow_changes"`
	Limits               Limits       `json:"limits"`
	GitHub               GitHubConfig `json:"github"`
	// Checkpoints are where the session waits for a human's approval
	// (issue 13): plan (after PLANNING_COMPLETE) and phase (before each
	// later phase starts). Empty: never.
	Checkpoints []CheckpointKind `json:"checkpoints,omitempty"`
	// Checks are named commands the harness runs after a READY claim and in
	// the merge gate (issue 13), in the file's order.
	Checks []CheckConfig `json:"checks,omitempty"`
}

// HasCheckpoint reports whether the configuration pauses at checkpoints of kind k.
func (c Config) HasCheckpoint(k CheckpointKind) bool {
	for _, x := range c.Checkpoints {
		if x == k {
			return true
		}
	}
	return false
}

// AgentConfig says how an agent step is run.
type AgentConfig struct {
	// Command is split like a shell; {model} {role} {prompt_file} are filled in.
	Command string `json:"command"`
	// CLI is the coding-agent CLI the command runs (agent.cli); CLIAuto
	// recognises it from the command (see config.AgentCLI).
	CLI     AgentCLI `json:"cli,omitempty"`
	Timeout Duration `json:"timeout"`
	// Grace is how long an agent has, after the SIGTERM sent at its timeout,
	// to save its work and exit before it is killed.
	Grace Duration `json:"grace,omitempty"`
	// Env names extra environment variables passed through to the agent
	// (e.g. ANTHROPIC_API_KEY). Nothing else from the harness's environment is;
	// names that carry credentials other than model keys are refused.
	Env []string `json:"env,omitempty"`
	// MaxTurns caps the agent's turns, for the CLIs that take a cap
	// (agent.max_turns); 0 leaves the CLI's own default.
	MaxTurns int `json:"max_turns,omitempty"`
}

// ModelsConfig names the model each role runs with. Escalation is the model a
// tech lead gets after ESCALATE_TO_OPUS; Validator runs BAZINGA validation.
type ModelsConfig struct {
	PM           string `json:"pm"`
	Developer    string `json:"developer"`
	Senior       string `json:"senior"`
	QA           string `json:"qa"`
	TechLead     string `json:"tech_lead"`
	Investigator string `json:"investigator"`
	Requirements string `json:"requirements"`
	Validator    string `json:"validator"`
	Escalation   string `json:"escalation"`
}

// TestsConfig is the test gate, the harness's own check of READY_* claims and
// the test part of BAZINGA validation.
type TestsConfig struct {
	Command string `json:"command"`
	// CLI is the coding-agent CLI the command runs (agent.cli); CLIAuto
	// recognises it from the command (see config.AgentCLI).
	CLI     AgentCLI `json:"cli,omitempty"`
	Timeout Duration `json:"timeout"`
	// Baseline says what a base that already fails at session start does:
	// pause for a human, accept (compare failures), or off (no baseline).
	Baseline BaselineMode `json:"baseline"`
	// JUnit is a glob (relative to the repository root) of the JUnit XML
	// reports the test command writes; failing tests are named from them.
	JUnit string `json:"junit,omitempty"`
}

// BuildConfig is an optional build command run before the tests.
type BuildConfig struct {
	Command string `json:"command"`
}

// MergeMethod says how an approved group lands on the base branch.
type MergeMethod string

const (
	// MergePush merges locally, runs the gate and fast-forwards the base.
	MergePush MergeMethod = "push"
	// MergePullRequest merges the group PR through the API with its head sha.
	MergePullRequest MergeMethod = "pull-request"
)

// MergeConfig configures landing.
type MergeConfig struct {
	Method            MergeMethod `json:"method"`
	RequiredApprovals int         `json:"required_approvals"`

	// --- merge.method pull-request (issue 11): how GitHub merges the group PR
	// and how long its required checks may stay pending.

	// PRMethod is the merge method asked of GitHub; auto (or empty, in a
	// state saved before the key existed) takes the first the repository
	// allows in PRMethodOrder.
	PRMethod PRMergeMethod `json:"pr_method,omitempty"`
	// ChecksTimeout is how long a group PR head's required checks may stay
	// pending before the session pauses naming them; zero (a state saved
	// before the key existed) means DefaultChecksTimeout.
	ChecksTimeout Duration `json:"checks_timeout,omitempty"`
}

// PRMergeMethod is GitHub's merge method for a pull request (the API's
// merge_method), or auto.
type PRMergeMethod string

const (
	PRMethodAuto   PRMergeMethod = "auto"
	PRMethodMerge  PRMergeMethod = "merge"
	PRMethodSquash PRMergeMethod = "squash"
	PRMethodRebase PRMergeMethod = "rebase"
)

// PRMethodOrder is the order auto tries the methods a repository allows:
// a merge commit first (the group branch stays an ancestor of the base, as
// with merge.method push), then squash, then rebase.
var PRMethodOrder = []PRMergeMethod{PRMethodMerge, PRMethodSquash, PRMethodRebase}

// DefaultChecksTimeout is merge.checks_timeout's default.
const DefaultChecksTimeout = 2 * time.Hour

// ChecksWait is the effective merge.checks_timeout.
func (m MergeConfig) ChecksWait() time.Duration {
	if m.ChecksTimeout <= 0 {
		return DefaultChecksTimeout
	}
	return m.ChecksTimeout.D()
}

// Limits are the escalation thresholds of the engine.
type Limits struct {
	DeveloperIterations     int `json:"developer_iterations"`
	QAAttempts              int `json:"qa_attempts"`
	ReviewAttempts          int `json:"review_attempts"`
	InvestigationIterations int `json:"investigation_iterations"`
	StepAttempts            int `json:"step_attempts"`
	// SessionCostUSD and StepCostUSD pause the session when the reported
	// cost of the whole session, or of one step, goes past them; 0 is no limit.
	SessionCostUSD float64 `json:"session_cost_usd,omitempty"`
	StepCostUSD    float64 `json:"step_cost_usd,omitempty"`
	// HighFindingRevisions is how many revisions HIGH review findings get
	// before a HIGH one still open waits for a human (issue 26); 0, in a
	// state saved before the key existed, is the default 1.
	HighFindingRevisions int `json:"high_finding_revisions,omitempty"`
}

// HighRevisions is Limits.HighFindingRevisions with its default.
func (l Limits) HighRevisions() int {
	if l.HighFindingRevisions <= 0 {
		return 1
	}
	return l.HighFindingRevisions
}

// GitHubConfig holds the settings only GitHub mode reads.
type GitHubConfig struct {
	// AgentWorkflow is the workflow file dispatched for each step.
	AgentWorkflow string `json:"agent_workflow"`
	// CloseIssue closes the issue when BAZINGA is verified.
	CloseIssue bool `json:"close_issue"`
	// JobIdentity is the login whose result comments are trusted for steps in flight.
	JobIdentity string `json:"job_identity"`
	// FollowUpLabel, when set, opens each follow-up as an issue with this
	// label, for a later session (issue 26; followup_issues.go). "": none.
	FollowUpLabel string `json:"followup_label,omitempty"`
}

// Duration is a time.Duration written like "30m" or "24h" in the file.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes the duration as Go's duration syntax.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads Go's duration syntax ("90s", "30m", "1h30m").
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// DefaultConfig returns the configuration used when .github/bazinga.yml is
// absent or silent, as ARCHITECTURE.md §8 lists it.
func DefaultConfig() Config {
	return Config{
		Agent: AgentConfig{
			// The claude driver adds stream-json, permissions and the schema.
			Command: "claude -p --model {model}",
			Timeout: Duration(30 * time.Minute),
			Grace:   Duration(30 * time.Second),
		},
		// The models of the default command's CLI; a file that runs another
		// CLI and sets no models gets that CLI's (config.ParseConfig).
		Models:               DefaultModels(CLIClaude),
		Tests:                TestsConfig{Command: "go test ./...", Timeout: Duration(20 * time.Minute), Baseline: BaselinePause},
		MaxParallel:          4,
		QA:                   true,
		Merge:                MergeConfig{Method: MergePullRequest, PRMethod: PRMethodAuto, ChecksTimeout: Duration(DefaultChecksTimeout)},
		ClarificationTimeout: Duration(24 * time.Hour),
		Limits: Limits{
			DeveloperIterations:     5,
			QAAttempts:              3,
			ReviewAttempts:          3,
			InvestigationIterations: 5,
			StepAttempts:            3,
			HighFindingRevisions:    1,
		},
		GitHub: GitHubConfig{
			AgentWorkflow: "bazinga-agent.yml",
			CloseIssue:    true,
			JobIdentity:   "github-actions[bot]",
		},
	}
}

// EngineError reports the values the engine cannot run with, in the words of
// the file's keys. The file and the command line refuse them on the way in; a
// hand-built Config with one of them is refused by Reconcile and
// CheckLiveness alike rather than silently replaced by a default.
func (c Config) EngineError() error {
	var problems []string
	intIn := func(key string, v, lo, hi int) {
		if v < lo || v > hi {
			problems = append(problems, fmt.Sprintf("%s is %d; it must be %d to %d", key, v, lo, hi))
		}
	}
	positive := func(key string, d Duration) {
		if d <= 0 {
			problems = append(problems, fmt.Sprintf("%s is %s; it must be positive", key, d))
		}
	}
	positive("agent.timeout", c.Agent.Timeout)
	positive("tests.timeout", c.Tests.Timeout)
	intIn("max_parallel", c.MaxParallel, 1, 64)
	intIn("merge.required_approvals", c.Merge.RequiredApprovals, 0, 10)
	positive("clarification_timeout", c.ClarificationTimeout)
	intIn("limits.developer_iterations", c.Limits.DeveloperIterations, 1, 20)
	intIn("limits.qa_attempts", c.Limits.QAAttempts, 1, 20)
	intIn("limits.review_attempts", c.Limits.ReviewAttempts, 1, 20)
	intIn("limits.investigation_iterations", c.Limits.InvestigationIterations, 0, 20)
	intIn("limits.step_attempts", c.Limits.StepAttempts, 1, 20)
	intIn("limits.high_finding_revisions", c.Limits.HighFindingRevisions, 0, 5)
	usdIn := func(key string, v float64) {
		if math.IsNaN(v) || v < 0 || v > MaxCostLimitUSD {
			problems = append(problems, fmt.Sprintf("%s is %v; it must be 0 (no limit) to %d", key, v, MaxCostLimitUSD))
		}
	}
	usdIn("limits.session_cost_usd", c.Limits.SessionCostUSD)
	usdIn("limits.step_cost_usd", c.Limits.StepCostUSD)
	for _, k := range c.Checkpoints {
		if k != CheckpointPlan && k != CheckpointPhase {
			problems = append(problems, fmt.Sprintf("checkpoints names %s; it must be plan or phase", k))
		}
	}
	if msg := CheckBaselineMode(string(c.Tests.Baseline)); msg != "" && c.Tests.Baseline != "" {
		problems = append(problems, "tests.baseline: "+msg)
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.New("invalid configuration: " + strings.Join(problems, "; "))
}

// CheckBaselineMode says what is wrong with a tests.baseline value, or "";
// shared by the engine's check and the file's.
func CheckBaselineMode(s string) string {
	switch BaselineMode(s) {
	case BaselinePause, BaselineAccept, BaselineOff:
		return ""
	}
	return fmt.Sprintf("want %q, %q or %q, got %q", BaselinePause, BaselineAccept, BaselineOff, s)
}
