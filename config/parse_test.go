package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

const configFixtures = "../testdata/config"

func readConfigFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(configFixtures, name))
	require.NoError(t, err)
	return data
}

// configErrors flattens what ParseConfig or Validate returned.
func configErrors(t testing.TB, err error) []*ConfigError {
	t.Helper()
	var out []*ConfigError
	var walk func(error)
	walk = func(e error) {
		if ce, ok := e.(*ConfigError); ok {
			out = append(out, ce)
			return
		}
		j, ok := e.(interface{ Unwrap() []error })
		require.True(t, ok, "unexpected error type %T: %v", e, e)
		for _, x := range j.Unwrap() {
			walk(x)
		}
	}
	walk(err)
	return out
}

// fullConfig is what testdata/config/full.yml holds.
func fullConfig() pipeline.Config {
	return pipeline.Config{
		Agent: pipeline.AgentConfig{
			Command:  `codex exec --model '{model}' --role={role} --prompt "{prompt_file}"`,
			CLI:      pipeline.CLICodex,
			Timeout:  pipeline.Duration(90 * time.Minute),
			Grace:    pipeline.Duration(45 * time.Second),
			Env:      []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"},
			MaxTurns: 50,
		},
		Models: pipeline.ModelsConfig{
			PM: "claude-opus-4", Developer: "claude-haiku", Senior: "claude-sonnet", QA: "claude-haiku",
			TechLead: "gpt-5", Investigator: "o3", Requirements: "claude-sonnet", Validator: "claude-sonnet",
			Escalation: "claude-opus-4.1",
		},
		Tests: pipeline.TestsConfig{Command: "make test && npm test", Timeout: pipeline.Duration(45 * time.Minute),
			Baseline: pipeline.BaselineAccept, JUnit: "build/test-results/**/*.xml"},
		Build:                pipeline.BuildConfig{Command: "make build"},
		MaxParallel:          8,
		QA:                   false,
		Merge:                pipeline.MergeConfig{Method: pipeline.MergePullRequest, RequiredApprovals: 2, PRMethod: pipeline.PRMethodSquash, ChecksTimeout: pipeline.Duration(3 * time.Hour)},
		ClarificationTimeout: pipeline.Duration(72 * time.Hour),
		AllowWorkflowChanges: true,
		Limits: pipeline.Limits{
			DeveloperIterations: 7, QAAttempts: 4, ReviewAttempts: 5, InvestigationIterations: 0, StepAttempts: 2, HighFindingRevisions: 1,
		},
		GitHub: pipeline.GitHubConfig{AgentWorkflow: "agent.yaml", CloseIssue: false, JobIdentity: "my-runner[bot]"},
		Checks: []pipeline.CheckConfig{
			{Name: "lint", Command: "golangci-lint run", Required: true},
			{Name: "security", Command: "gosec ./...", Required: false, Timeout: pipeline.Duration(5 * time.Minute)},
		},
	}
}

func TestParseConfigDefaults(t *testing.T) {
	for name, in := range map[string]string{
		"empty":                "",
		"blank lines":          "\n\n  \n",
		"only comments":        "# nothing here\n# agent:\n#   timeout: 5m\n",
		"document marker":      "---\n",
		"null root":            "~\n",
		"null section":         "agent:\nmodels:\n",
		"section all comments": "agent:\n  # command: foo\n  # timeout: 5m\n",
		"null leaf":            "max_parallel:\nagent:\n  timeout: ~\n",
		"explicit document":    "---\nqa: true\n...\n",
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(in))
			require.NoError(t, err)
			assert.Equal(t, pipeline.DefaultConfig(), cfg)
		})
	}
}

func TestParseConfigDesignExampleIsDefaults(t *testing.T) {
	cfg, err := ParseConfig(readConfigFixture(t, "design.yml"))
	require.NoError(t, err)
	assert.Equal(t, pipeline.DefaultConfig(), cfg)
}

func TestParseConfigFull(t *testing.T) {
	cfg, err := ParseConfig(readConfigFixture(t, "full.yml"))
	require.NoError(t, err)
	assert.Equal(t, fullConfig(), cfg)
	assert.NoError(t, Validate(cfg))
}

func TestParseConfigOverrides(t *testing.T) {
	tests := []struct {
		in   string
		want func(*pipeline.Config)
	}{
		{"agent:\n  command: aider --model {model} --message-file {prompt_file}\n",
			func(c *pipeline.Config) { c.Agent.Command = "aider --model {model} --message-file {prompt_file}" }},
		{"agent:\n  command: ./run-agent.sh\n", func(c *pipeline.Config) { c.Agent.Command = "./run-agent.sh" }},
		{"agent:\n  timeout: 90s\n", func(c *pipeline.Config) { c.Agent.Timeout = pipeline.Duration(90 * time.Second) }},
		{"agent:\n  env:\n    - ANTHROPIC_API_KEY\n    - _X1\n", func(c *pipeline.Config) { c.Agent.Env = []string{"ANTHROPIC_API_KEY", "_X1"} }},
		{"agent:\n  env: []\n", func(c *pipeline.Config) { c.Agent.Env = nil }},
		{"agent:\n  env: [BAZINGA]\n", func(c *pipeline.Config) { c.Agent.Env = []string{"BAZINGA"} }},
		{"agent:\n  env: [CLAUDE_CODE_OAUTH_TOKEN, OPENAI_API_KEY, GEMINI_API_KEY, GOOGLE_API_KEY, HTTPS_PROXY]\n", func(c *pipeline.Config) {
			c.Agent.Env = []string{"CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "HTTPS_PROXY"}
		}},
		{"agent:\n  grace: 2m\n", func(c *pipeline.Config) { c.Agent.Grace = pipeline.Duration(2 * time.Minute) }},
		{"agent:\n  grace: 5m\n", func(c *pipeline.Config) { c.Agent.Grace = pipeline.Duration(5 * time.Minute) }},
		{"models:\n  pm: a\n", func(c *pipeline.Config) { c.Models.PM = "a" }},
		{"models:\n  developer: a\n", func(c *pipeline.Config) { c.Models.Developer = "a" }},
		{"models:\n  senior: a\n", func(c *pipeline.Config) { c.Models.Senior = "a" }},
		{"models:\n  qa: a\n", func(c *pipeline.Config) { c.Models.QA = "a" }},
		{"models:\n  tech_lead: a\n", func(c *pipeline.Config) { c.Models.TechLead = "a" }},
		{"models:\n  investigator: a\n", func(c *pipeline.Config) { c.Models.Investigator = "a" }},
		{"models:\n  requirements: a\n", func(c *pipeline.Config) { c.Models.Requirements = "a" }},
		{"models:\n  validator: a\n", func(c *pipeline.Config) { c.Models.Validator = "a" }},
		{"models:\n  escalation: claude-opus-4-1@2025\n", func(c *pipeline.Config) { c.Models.Escalation = "claude-opus-4-1@2025" }},
		{"tests:\n  command: npm test\n", func(c *pipeline.Config) { c.Tests.Command = "npm test" }},
		{"tests:\n  command: \"\"\n", func(c *pipeline.Config) { c.Tests.Command = "" }},
		{"tests:\n  timeout: 1h\n", func(c *pipeline.Config) { c.Tests.Timeout = pipeline.Duration(time.Hour) }},
		{"build:\n  command: make\n", func(c *pipeline.Config) { c.Build.Command = "make" }},
		{"max_parallel: 1\n", func(c *pipeline.Config) { c.MaxParallel = 1 }},
		{"max_parallel: 64\n", func(c *pipeline.Config) { c.MaxParallel = 64 }},
		{"max_parallel: 0x10\n", func(c *pipeline.Config) { c.MaxParallel = 16 }},
		{"max_parallel: 010\n", func(c *pipeline.Config) { c.MaxParallel = 10 }}, // YAML 1.2: decimal, not octal
		{"max_parallel: +7\n", func(c *pipeline.Config) { c.MaxParallel = 7 }},
		{"qa: false\n", func(c *pipeline.Config) { c.QA = false }},
		{"qa: False\n", func(c *pipeline.Config) { c.QA = false }},
		{"merge:\n  method: pull-request\n", func(c *pipeline.Config) { c.Merge.Method = pipeline.MergePullRequest }},
		{"merge:\n  method: push\n", func(c *pipeline.Config) { c.Merge.Method = pipeline.MergePush }},
		{"merge:\n  required_approvals: 10\n", func(c *pipeline.Config) { c.Merge.RequiredApprovals = 10 }},
		{"clarification_timeout: 30m\n", func(c *pipeline.Config) { c.ClarificationTimeout = pipeline.Duration(30 * time.Minute) }},
		{"allow_workflow_changes: true\n", func(c *pipeline.Config) { c.AllowWorkflowChanges = true }},
		{"limits:\n  developer_iterations: 20\n", func(c *pipeline.Config) { c.Limits.DeveloperIterations = 20 }},
		{"limits:\n  qa_attempts: 1\n", func(c *pipeline.Config) { c.Limits.QAAttempts = 1 }},
		{"limits:\n  review_attempts: 2\n", func(c *pipeline.Config) { c.Limits.ReviewAttempts = 2 }},
		{"limits:\n  investigation_iterations: 0\n", func(c *pipeline.Config) { c.Limits.InvestigationIterations = 0 }},
		{"limits:\n  step_attempts: 9\n", func(c *pipeline.Config) { c.Limits.StepAttempts = 9 }},
		{"github:\n  agent_workflow: other.yaml\n", func(c *pipeline.Config) { c.GitHub.AgentWorkflow = "other.yaml" }},
		{"github:\n  close_issue: false\n", func(c *pipeline.Config) { c.GitHub.CloseIssue = false }},
		{"github:\n  job_identity: octo-bot[bot]\n", func(c *pipeline.Config) { c.GitHub.JobIdentity = "octo-bot[bot]" }},
		// Anchors and aliases are accepted.
		{"models:\n  pm: &big opus-x\n  tech_lead: *big\n", func(c *pipeline.Config) { c.Models.PM, c.Models.TechLead = "opus-x", "opus-x" }},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.in, "\n", " "), func(t *testing.T) {
			want := pipeline.DefaultConfig()
			tt.want(&want)
			cfg, err := ParseConfig([]byte(tt.in))
			require.NoError(t, err)
			assert.Equal(t, want, cfg)
			assert.NoError(t, Validate(cfg))
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		line int
		key  string
		msg  []string // substrings of the error text
	}{
		// unknown keys
		{"unknown top key, typo", "qa: true\nagnet:\n  command: x\n", 2, "agnet",
			[]string{`bazinga.yml line 2: unknown key "agnet"; did you mean "agent"?`}},
		{"unknown nested key, typo", "agent:\n  timeout: 5m\n\n  comand: claude\n", 4, "agent.comand",
			[]string{`bazinga.yml line 4: unknown key "agent.comand"; did you mean "agent.command"?`}},
		{"unknown key, dash for underscore", "max-parallel: 2\n", 1, "max-parallel", []string{`did you mean "max_parallel"?`}},
		{"unknown key, upper case", "limits:\n  QA_ATTEMPTS: 2\n", 2, "limits.QA_ATTEMPTS", []string{`did you mean "limits.qa_attempts"?`}},
		{"unknown key, no suggestion", "colour: blue\n", 1, "colour",
			[]string{`unknown key "colour" (known here: agent, models, tests, build, max_parallel, qa, merge,`}},
		{"unknown key, in another section", "method: pull-request\n", 1, "method", []string{`did you mean "merge.method"?`}},
		{"unknown key, top key nested", "agent:\n  max_parallel: 2\n", 2, "agent.max_parallel", []string{`did you mean "max_parallel"?`}},
		{"unknown key, ambiguous", "timeout: 5m\n", 1, "timeout", []string{`unknown key "timeout" (known here:`}},
		{"unknown key in github", "github:\n  close_issues: true\n", 2, "github.close_issues", []string{`did you mean "github.close_issue"?`}},
		{"non-scalar key", "? [a, b]\n: 1\n", 1, "", []string{"keys must be plain names, got a list"}},
		{"merge key", "agent:\n  <<: {timeout: 5m}\n", 2, "agent", []string{"merge keys (<<) are not supported"}},

		// wrong kinds
		{"list for a section", "agent:\n  - command\n", 2, "agent",
			[]string{"agent: want a mapping of keys (command, cli, timeout, grace, max_turns, env), got a list"}},
		{"scalar for a section", "models: opus\n", 1, "models", []string{`models: want a mapping of keys (pm, developer,`, `got "opus"`}},
		{"mapping for an int", "max_parallel:\n  value: 4\n", 2, "max_parallel", []string{"want a whole number from 1 to 64, got a mapping"}},
		{"list for a string", "tests:\n  command: [go, test]\n", 2, "tests.command", []string{"want a string, got a list"}},
		{"number for a string", "github:\n  job_identity: 12345\n", 2, "github.job_identity",
			[]string{`want a string, got 12345 (quote it if you mean the string: "12345")`}},
		{"mapping for a duration", "tests:\n  timeout: {m: 5}\n", 2, "tests.timeout", []string{"got a mapping"}},
		{"list for a bool", "qa: [true]\n", 1, "qa", []string{"want true or false, got a list"}},

		// durations
		{"duration in words", "agent:\n  timeout: 30 minutes\n", 2, "agent.timeout",
			[]string{`agent.timeout: want a Go duration such as "30m", "90s" or "1h30m", got "30 minutes"`}},
		{"duration without unit", "agent:\n  timeout: 30\n", 2, "agent.timeout", []string{"got 30 (a unit is required)"}},
		{"zero duration", "tests:\n  timeout: 0s\n", 2, "tests.timeout", []string{`want a positive duration such as "30m", got "0s"`}},
		{"negative duration", "clarification_timeout: -1h\n", 1, "clarification_timeout", []string{`want a positive duration`, `got "-1h0m0s"`}},

		// booleans
		{"yes", "qa: yes\n", 1, "qa", []string{`qa: want true or false, got "yes" (YAML 1.2: only true and false are booleans`}},
		{"on", "allow_workflow_changes: on\n", 1, "allow_workflow_changes", []string{`got "on" (YAML 1.2`}},
		{"tagged yes", "github:\n  close_issue: !!bool yes\n", 2, "github.close_issue", []string{"YAML 1.2"}},
		{"quoted true", "qa: \"true\"\n", 1, "qa", []string{`got "true" (write it without quotes)`}},
		{"number for bool", "qa: 1\n", 1, "qa", []string{"want true or false, got 1"}},

		// integers
		{"word for int", "limits:\n  developer_iterations: 5\n  qa_attempts: three\n", 3, "limits.qa_attempts",
			[]string{`bazinga.yml line 3: limits.qa_attempts: want a whole number from 1 to 20, got "three"`}},
		{"max_parallel 0", "max_parallel: 0\n", 1, "max_parallel", []string{"want a whole number from 1 to 64, got 0"}},
		{"max_parallel 65", "max_parallel: 65\n", 1, "max_parallel", []string{"got 65"}},
		{"max_parallel float", "max_parallel: 2.5\n", 1, "max_parallel", []string{"got 2.5"}},
		{"max_parallel quoted", "max_parallel: \"4\"\n", 1, "max_parallel", []string{`got "4"`}},
		{"required_approvals 11", "merge:\n  required_approvals: 11\n", 2, "merge.required_approvals",
			[]string{"want a whole number from 0 to 10, got 11"}},
		{"required_approvals negative", "merge:\n  required_approvals: -1\n", 2, "merge.required_approvals", []string{"got -1"}},
		{"developer_iterations overflow", "limits:\n  developer_iterations: 99999999999999999999\n", 2,
			"limits.developer_iterations", []string{"got 99999999999999999999"}},
		{"review_attempts 0", "limits:\n  review_attempts: 0\n", 2, "limits.review_attempts", []string{"from 1 to 20, got 0"}},
		{"step_attempts 21", "limits:\n  step_attempts: 21\n", 2, "limits.step_attempts", []string{"from 1 to 20, got 21"}},
		{"investigation_iterations 21", "limits:\n  investigation_iterations: 21\n", 2, "limits.investigation_iterations",
			[]string{"from 0 to 20 (0 disables investigation), got 21"}},
		{"investigation_iterations negative", "limits:\n  investigation_iterations: -1\n", 2, "limits.investigation_iterations",
			[]string{"got -1"}},

		// merge method
		{"merge method", "merge:\n  method: squash\n", 2, "merge.method", []string{`want "push" or "pull-request", got "squash"`}},
		{"merge method underscore", "merge:\n  method: pull_request\n", 2, "merge.method", []string{`got "pull_request"`}},

		// models
		{"empty model", "models:\n  pm: \"\"\n", 2, "models.pm", []string{"want a model name, got an empty string"}},
		{"model with space", "models:\n  qa: claude sonnet\n", 2, "models.qa", []string{`want a model name without spaces, got "claude sonnet"`}},
		{"NUL in a string", "tests:\n  command: \"go\\0test\"\n", 2, "tests.command", []string{"contains a NUL character"}},
		{"model as number", "models:\n  developer: 4\n", 2, "models.developer", []string{"want a string, got 4"}},

		// agent.command
		{"empty command", "agent:\n  command: \"\"\n", 2, "agent.command", []string{"want the command that runs an agent"}},
		{"blank command", "agent:\n  command: \"   \"\n", 2, "agent.command", []string{"want the command that runs an agent"}},
		{"empty program", "agent:\n  command: \"'' -p\"\n", 2, "agent.command", []string{"the program name (first word) is empty"}},
		{"unbalanced single quote", "agent:\n  command: claude -p 'oops\n", 2, "agent.command",
			[]string{"cannot split it like a shell: unbalanced single quote at column 11"}},
		{"unbalanced double quote", "agent:\n  command: 'claude -p \"oops'\n", 2, "agent.command",
			[]string{"unbalanced double quote at column 11"}},
		{"placeholder typo", "agent:\n  command: claude --model {modle}\n", 2, "agent.command",
			[]string{"unknown placeholder {modle}; did you mean {model}?"}},
		{"placeholder dash", "agent:\n  command: claude -f {prompt-file}\n", 2, "agent.command",
			[]string{"unknown placeholder {prompt-file}; did you mean {prompt_file}?"}},
		{"unknown placeholder", "agent:\n  command: claude --session {session_id}\n", 2, "agent.command",
			[]string{"unknown placeholder {session_id} (known: {model}, {role}, {prompt_file})"}},
		{"placeholder in quotes", "agent:\n  command: \"claude --x '{group}'\"\n", 2, "agent.command",
			[]string{"unknown placeholder {group}"}},

		// agent.env
		{"env scalar", "agent:\n  env: ANTHROPIC_API_KEY\n", 2, "agent.env",
			[]string{`want a list of environment variable names, got "ANTHROPIC_API_KEY" (write a list: [ANTHROPIC_API_KEY])`}},
		{"env mapping", "agent:\n  env:\n    KEY: value\n", 3, "agent.env", []string{"got a mapping"}},
		{"env bad name", "agent:\n  env:\n    - GOOD\n    - 1BAD\n", 4, "agent.env",
			[]string{`"1BAD" is not a valid environment variable name`}},
		{"env dash", "agent:\n  env: [MY-KEY]\n", 2, "agent.env", []string{`"MY-KEY" is not a valid environment variable name`}},
		{"env harness variable", "agent:\n  env:\n    - BAZINGA_MODEL\n", 3, "agent.env",
			[]string{`"BAZINGA_MODEL" cannot be passed through: the harness sets BAZINGA_* variables itself`}},
		{"env harness variable lower case", "agent:\n  env: [bazinga_result_file]\n", 2, "agent.env", []string{"BAZINGA_*"}},
		{"env server secret", "agent:\n  env: [BAZINGA_PRIVATE_KEY]\n", 2, "agent.env", []string{"cannot be passed through"}},
		{"env twice", "agent:\n  env:\n    - A\n    - B\n    - A\n", 5, "agent.env", []string{`"A" is listed twice (lines 3 and 5)`}},
		{"env entry mapping", "agent:\n  env:\n    - {A: 1}\n", 3, "agent.env", []string{"want an environment variable name, got a mapping"}},
		{"env entry number", "agent:\n  env: [12]\n", 2, "agent.env", []string{"want an environment variable name, got 12"}},
		// agent.env refuses names that carry credentials (issue 10)
		{"env github token", "agent:\n  env:\n    - ANTHROPIC_API_KEY\n    - GITHUB_TOKEN\n", 4, "agent.env",
			[]string{`bazinga.yml line 4: agent.env: "GITHUB_TOKEN" cannot be passed through: it looks like a credential (*TOKEN*); of those only model keys are passed (ANTHROPIC_API_KEY, `}},
		{"env action input", "agent:\n  env: [INPUT_GITHUB_TOKEN]\n", 2, "agent.env",
			[]string{`"INPUT_GITHUB_TOKEN" cannot be passed through: INPUT_* variables are the Action's inputs, such as its GitHub token`}},
		{"env actions runtime", "agent:\n  env: [ACTIONS_ID_TOKEN_REQUEST_URL]\n", 2, "agent.env",
			[]string{`"ACTIONS_ID_TOKEN_REQUEST_URL" cannot be passed through: ACTIONS_* variables are the Actions runner's own tokens and URLs`}},
		{"env secret", "agent:\n  env: [MY_SECRET]\n", 2, "agent.env", []string{`"MY_SECRET" cannot be passed through: it looks like a credential (*SECRET*)`}},
		{"env key", "agent:\n  env: [DEPLOY_KEY_ID]\n", 2, "agent.env", []string{`"DEPLOY_KEY_ID" cannot be passed through: it looks like a credential (*KEY*)`}},
		{"env gh token", "agent:\n  env: [GH_TOKEN]\n", 2, "agent.env", []string{`"GH_TOKEN" cannot be passed through: it looks like a credential (*TOKEN*)`}},
		{"env key lower case", "agent:\n  env: [npm_token]\n", 2, "agent.env", []string{`"npm_token" cannot be passed through: it looks like a credential (*TOKEN*)`}},
		{"env model key in lower case is not the model key", "agent:\n  env: [anthropic_api_key]\n", 2, "agent.env", []string{`(*KEY*)`}},
		// agent.grace
		{"grace too long", "agent:\n  grace: 10m\n", 2, "agent.grace",
			[]string{`agent.grace: want at most 5m (it must fit in the engine's step grace with the commit and push after it), got "10m"`}},
		{"grace zero", "agent:\n  grace: 0s\n", 2, "agent.grace", []string{`want a positive duration such as "30m", got "0s"`}},
		{"grace without unit", "agent:\n  grace: 30\n", 2, "agent.grace", []string{"(a unit is required)"}},

		// github
		{"workflow path", "github:\n  agent_workflow: .github/workflows/agent.yml\n", 2, "github.agent_workflow",
			[]string{"want the workflow's file name only"}},
		{"workflow extension", "github:\n  agent_workflow: agent\n", 2, "github.agent_workflow", []string{"ending in .yml or .yaml"}},
		{"workflow empty", "github:\n  agent_workflow: ''\n", 2, "github.agent_workflow", []string{"got an empty string"}},
		{"job identity empty", "github:\n  job_identity: \"\"\n", 2, "github.job_identity", []string{"want a GitHub login"}},
		{"job identity a person", "github:\n  job_identity: octo-cat\n", 2, "github.job_identity", []string{"want a bot's login ending in [bot]", `"octo-cat"`}},

		// duplicates
		{"duplicate top key", "max_parallel: 2\nqa: true\nmax_parallel: 3\n", 3, "max_parallel",
			[]string{`bazinga.yml line 3: duplicate key "max_parallel" (lines 1 and 3)`}},
		{"duplicate nested key", "agent:\n  timeout: 5m\n  command: x\n  timeout: 6m\n", 4, "agent.timeout",
			[]string{`duplicate key "agent.timeout" (lines 2 and 4)`}},
		{"duplicate section", "agent:\n  timeout: 5m\nqa: true\nagent:\n  command: x\n", 4, "agent",
			[]string{`duplicate key "agent" (lines 1 and 4)`}},

		// the document
		{"root list", "- agent\n- models\n", 1, "", []string{"bazinga.yml line 1: the top level must be a mapping of keys", "got a list"}},
		{"root string", "\n\nhello\n", 3, "", []string{`got "hello"`}},
		{"two documents", "qa: true\n---\nqa: false\n", 2, "", []string{"bazinga.yml line 2: a second YAML document starts here"}},
		{"empty second document", "qa: true\n---\n", 2, "", []string{"a second YAML document"}},
		// yaml.v3 reports the line of the construct it was reading, not
		// always the line of the offending character.
		{"syntax error", "agent:\n  command: x\n bad: 1\n", 2, "", []string{"bazinga.yml line 2: invalid YAML: did not find expected key"}},
		{"unclosed flow", "agent: {command: x\n", 1, "", []string{"invalid YAML: did not find expected ',' or '}'"}},
		{"tab indentation", "agent:\n\tcommand: x\n", 2, "", []string{"invalid YAML"}},
		{"alias to a bad value", "models:\n  pm: &e ''\n  qa: *e\n", 2, "models.pm", []string{"want a model name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(tt.in))
			require.Error(t, err)
			assert.Equal(t, pipeline.Config{}, cfg, "no partial configuration on error")
			errs := configErrors(t, err)
			require.NotEmpty(t, errs)
			first := errs[0]
			assert.Equal(t, tt.line, first.Line, "line of %q", first.Error())
			assert.Equal(t, tt.key, first.Key)
			assert.Equal(t, "bazinga.yml", first.File)
			for _, m := range tt.msg {
				assert.Contains(t, first.Error(), m)
			}
		})
	}
}

func TestParseConfigReportsEveryErrorInLineOrder(t *testing.T) {
	in := `agent:
  timeout: soon
  comand: x
max_parallel: 0
qa: yes
limits:
  qa_attempts: three
agent:
  env: [A]
`
	_, err := ParseConfig([]byte(in))
	require.Error(t, err)
	errs := configErrors(t, err)
	var got []string
	for _, e := range errs {
		got = append(got, e.Key)
	}
	assert.Equal(t, []string{"agent.timeout", "agent.comand", "max_parallel", "qa", "limits.qa_attempts", "agent"}, got)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 6)
	assert.True(t, strings.HasPrefix(lines[0], "bazinga.yml line 2: agent.timeout: "), lines[0])
	assert.True(t, strings.HasPrefix(lines[5], "bazinga.yml line 8: duplicate key"), lines[5])
	var ce *ConfigError
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, 2, ce.Line)
}

func TestParseConfigOneErrorIsNotJoined(t *testing.T) {
	_, err := ParseConfig([]byte("max_parallel: 0\n"))
	ce, ok := err.(*ConfigError)
	require.True(t, ok, "%T", err)
	assert.Equal(t, &ConfigError{File: "bazinga.yml", Line: 1, Key: "max_parallel",
		Msg: "want a whole number from 1 to 64, got 0"}, ce)
}

func TestConfigErrorFormat(t *testing.T) {
	tests := []struct {
		err  ConfigError
		want string
	}{
		{ConfigError{File: "bazinga.yml", Line: 12, Key: "limits.qa_attempts", Msg: "bad"}, "bazinga.yml line 12: limits.qa_attempts: bad"},
		{ConfigError{File: ".github/bazinga.yml", Line: 3, Msg: "invalid YAML: x"}, ".github/bazinga.yml line 3: invalid YAML: x"},
		{ConfigError{File: "bazinga.yml", Msg: "invalid YAML: x"}, "bazinga.yml: invalid YAML: x"},
		{ConfigError{Key: "max_parallel", Msg: "bad"}, "max_parallel: bad"},
		{ConfigError{Line: 4, Key: "qa", Msg: "bad"}, "line 4: qa: bad"},
		{ConfigError{File: "f", Line: 7, Key: "agent.comand", Msg: `unknown key "agent.comand"`, keyInMsg: true},
			`f line 7: unknown key "agent.comand"`},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.err.Error())
	}
}

func TestParseConfigFile(t *testing.T) {
	t.Run("valid file", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(configFixtures, "full.yml"))
		require.NoError(t, err)
		cfg, err := ParseConfigFile("full.yml", data)
		require.NoError(t, err)
		assert.Equal(t, fullConfig(), cfg)
	})
	t.Run("errors carry the name", func(t *testing.T) {
		path := ".github/bazinga.yml"
		_, err := ParseConfigFile(path, []byte("qa: true\nmax_parallel: 0\nqa: false\n"))
		require.Error(t, err)
		assert.Equal(t, path+" line 2: max_parallel: want a whole number from 1 to 64, got 0\n"+
			path+` line 3: duplicate key "qa" (lines 1 and 3)`, err.Error())
	})
	t.Run("syntax error carries the name", func(t *testing.T) {
		_, err := ParseConfigFile("x.yml", []byte("a: [\n"))
		require.Error(t, err)
		assert.True(t, strings.HasPrefix(err.Error(), "x.yml line "), err.Error())
	})
}

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"", nil, ""},
		{"   \t\n ", nil, ""},
		{"claude", []string{"claude"}, ""},
		{"claude -p --model {model} --output-format json", []string{"claude", "-p", "--model", "{model}", "--output-format", "json"}, ""},
		{"  a\t b \n c  ", []string{"a", "b", "c"}, ""},
		{`a 'b c' d`, []string{"a", "b c", "d"}, ""},
		{`'it''s'`, []string{"its"}, ""},
		{`'a\nb "c"'`, []string{`a\nb "c"`}, ""},
		{`"a b" c`, []string{"a b", "c"}, ""},
		{`"say \"hi\""`, []string{`say "hi"`}, ""},
		{`"back\\slash \$HOME \` + "`x`" + `"`, []string{`back\slash $HOME ` + "`x`"}, ""},
		{`"C:\path\n"`, []string{`C:\path\n`}, ""},
		{`"it's"`, []string{"it's"}, ""},
		{`'say "hi"'`, []string{`say "hi"`}, ""},
		{`a\ b c`, []string{"a b", "c"}, ""},
		{`\'quoted\'`, []string{"'quoted'"}, ""},
		{`\"`, []string{`"`}, ""},
		{`\\`, []string{`\`}, ""},
		{"a \\\n b", []string{"a", "b"}, ""},
		{"a\\\nb", []string{"ab"}, ""},
		{"\"a\\\nb\"", []string{"ab"}, ""},
		{`a "" b`, []string{"a", "", "b"}, ""},
		{`''`, []string{""}, ""},
		{`pre"mid dle"'post'`, []string{"premid dlepost"}, ""},
		{`--settings '{"a": 1}'`, []string{"--settings", `{"a": 1}`}, ""},
		{"日本 'ü x'", []string{"日本", "ü x"}, ""},
		{`a 'b`, nil, "unbalanced single quote at column 3"},
		{`a "b`, nil, "unbalanced double quote at column 3"},
		{`"a\"`, nil, "unbalanced double quote at column 1"},
		{`ü "b`, nil, "unbalanced double quote at column 3"},
		{`'a'"b`, nil, "unbalanced double quote"},
		{`a \`, nil, "lone backslash at the end (column 3)"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := SplitCommand(tt.in)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*pipeline.Config)
		want   []string // every error's text, in order; nil means valid
	}{
		{"defaults", func(*pipeline.Config) {}, nil},
		{"full", func(c *pipeline.Config) { *c = fullConfig() }, nil},
		{"no investigation", func(c *pipeline.Config) { c.Limits.InvestigationIterations = 0 }, nil},
		{"empty tests and build commands", func(c *pipeline.Config) { c.Tests.Command, c.Build.Command = "", "" }, nil},
		{"max_parallel 0 from a flag", func(c *pipeline.Config) { c.MaxParallel = 0 },
			[]string{"max_parallel: want a whole number from 1 to 64, got 0"}},
		{"max_parallel 65", func(c *pipeline.Config) { c.MaxParallel = 65 },
			[]string{"max_parallel: want a whole number from 1 to 64, got 65"}},
		{"empty agent command", func(c *pipeline.Config) { c.Agent.Command = "" },
			[]string{"agent.command: want the command that runs an agent, got an empty string"}},
		{"agent command unbalanced", func(c *pipeline.Config) { c.Agent.Command = `claude "x` },
			[]string{"agent.command: cannot split it like a shell: unbalanced double quote at column 8"}},
		{"agent command placeholder", func(c *pipeline.Config) { c.Agent.Command = "claude {rol}" },
			[]string{"agent.command: unknown placeholder {rol}; did you mean {role}?"}},
		{"agent timeout zero", func(c *pipeline.Config) { c.Agent.Timeout = 0 },
			[]string{`agent.timeout: want a positive duration such as "30m", got "0s"`}},
		{"agent grace zero", func(c *pipeline.Config) { c.Agent.Grace = 0 },
			[]string{`agent.grace: want a positive duration such as "30m", got "0s"`}},
		{"agent grace too long", func(c *pipeline.Config) { c.Agent.Grace = pipeline.Duration(time.Hour) },
			[]string{`agent.grace: want at most 5m (it must fit in the engine's step grace with the commit and push after it), got "1h"`}},
		{"env credentials", func(c *pipeline.Config) { c.Agent.Env = []string{"GITHUB_TOKEN", "ANTHROPIC_API_KEY", "INPUT_X"} },
			[]string{
				`agent.env: "GITHUB_TOKEN" cannot be passed through: it looks like a credential (*TOKEN*); of those only model keys are passed (` + strings.Join(ModelKeys, ", ") + ")",
				`agent.env: "INPUT_X" cannot be passed through: INPUT_* variables are the Action's inputs, such as its GitHub token`,
			}},
		{"tests timeout negative", func(c *pipeline.Config) { c.Tests.Timeout = pipeline.Duration(-time.Second) },
			[]string{`tests.timeout: want a positive duration such as "30m", got "-1s"`}},
		{"clarification timeout zero", func(c *pipeline.Config) { c.ClarificationTimeout = 0 },
			[]string{`clarification_timeout: want a positive duration such as "30m", got "0s"`}},
		{"env", func(c *pipeline.Config) { c.Agent.Env = []string{"OK", "BAZINGA_STEP", "9X", "OK"} },
			[]string{
				`agent.env: "BAZINGA_STEP" cannot be passed through: the harness sets BAZINGA_* variables itself`,
				`agent.env: "9X" is not a valid environment variable name (letters, digits and _, not starting with a digit)`,
				`agent.env: "OK" is listed twice`,
			}},
		{"model empty", func(c *pipeline.Config) { c.Models.Escalation = "" },
			[]string{"models.escalation: want a model name, got an empty string"}},
		{"model with tab", func(c *pipeline.Config) { c.Models.Validator = "a\tb" },
			[]string{`models.validator: want a model name without spaces, got "a\tb"`}},
		{"merge method empty", func(c *pipeline.Config) { c.Merge.Method = "" },
			[]string{`merge.method: want "push" or "pull-request", got ""`}},
		{"required approvals", func(c *pipeline.Config) { c.Merge.RequiredApprovals = -1 },
			[]string{"merge.required_approvals: want a whole number from 0 to 10, got -1"}},
		{"limits", func(c *pipeline.Config) {
			c.Limits = pipeline.Limits{DeveloperIterations: 0, QAAttempts: 21, ReviewAttempts: 0, InvestigationIterations: -1, StepAttempts: 0}
		}, []string{
			"limits.developer_iterations: want a whole number from 1 to 20, got 0",
			"limits.qa_attempts: want a whole number from 1 to 20, got 21",
			"limits.review_attempts: want a whole number from 1 to 20, got 0",
			"limits.investigation_iterations: want a whole number from 0 to 20 (0 disables investigation), got -1",
			"limits.step_attempts: want a whole number from 1 to 20, got 0",
			"limits.high_finding_revisions: want a whole number from 1 to 5, got 0",
		}},
		{"github", func(c *pipeline.Config) { c.GitHub = pipeline.GitHubConfig{} }, []string{
			`github.agent_workflow: want a workflow file name such as "bazinga-agent.yml", got an empty string`,
			`github.job_identity: want a GitHub login such as "github-actions[bot]", got ""`,
		}},
		{"zero Config", func(c *pipeline.Config) { *c = pipeline.Config{} }, nil}, // checked below: many errors
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := pipeline.DefaultConfig()
			tt.modify(&c)
			err := Validate(c)
			if tt.name == "zero Config" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "agent.command: ")
				assert.Contains(t, err.Error(), "max_parallel: ")
				return
			}
			if tt.want == nil {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			var got []string
			for _, e := range configErrors(t, err) {
				assert.Zero(t, e.Line, "Validate has no line")
				got = append(got, e.Error())
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	tricky := pipeline.DefaultConfig()
	tricky.Tests.Command = "true"
	tricky.Build.Command = "a: b # not a comment"
	tricky.Agent.Command = `sh -c 'echo "{role}" > out' # {prompt_file}`
	tricky.GitHub.JobIdentity = "#not-a-comment[bot]"
	tricky.Models.Investigator = "12345"
	tricky.Models.PM = "null"
	tricky.Models.QA = "yes"
	tricky.Models.Senior = "~"
	tricky.Models.Developer = "-x"
	tricky.Models.Validator = "'q'"
	tricky.Models.Escalation = "日本"
	tricky.Tests.Timeout = pipeline.Duration(1500 * time.Millisecond)
	tricky.Agent.Timeout = pipeline.Duration(time.Hour + time.Second)
	multiline := pipeline.DefaultConfig()
	multiline.Tests.Command = "go vet ./...\ngo test ./...\n"
	multiline.Build.Command = "  leading and trailing  "

	awkward := []string{"", "a\r\nb", "line \nx", "\n", "x\n\n", "\nabc", "  \n  x", "\t", "a\u0085b",
		"a\u2028b", "\x01", "\ufeffx", "a\n b\n", "#", "- ", "x\n#y", " ", "%x", "@x", "*x", "&x", "!x", "\x7f", "a\u00a0",
		"0x10", "1e3", ".inf", "NO", "'", `"`, "{", "[a]", "? x", "---", "..."}
	for _, s := range awkward {
		c := pipeline.DefaultConfig()
		c.Build.Command = s
		out, err := Marshal(c)
		require.NoError(t, err)
		back, err := ParseConfig(out)
		require.NoError(t, err, "%q\n%s", s, out)
		assert.Equal(t, s, back.Build.Command, "%s", out)
	}

	for name, c := range map[string]pipeline.Config{
		"defaults":  pipeline.DefaultConfig(),
		"full":      fullConfig(),
		"tricky":    tricky,
		"multiline": multiline,
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, Validate(c))
			out, err := Marshal(c)
			require.NoError(t, err)
			back, err := ParseConfig(out)
			require.NoError(t, err, "%s", out)
			assert.Equal(t, c, back, "%s", out)
			again, err := Marshal(back)
			require.NoError(t, err)
			assert.Equal(t, string(out), string(again), "Marshal is deterministic")
		})
	}
}

func TestMarshalWritesEveryKey(t *testing.T) {
	out, err := Marshal(pipeline.DefaultConfig())
	require.NoError(t, err)
	s := string(out)
	for _, k := range cfgKeys {
		leaf := k.path[strings.LastIndexByte(k.path, '.')+1:]
		assert.Contains(t, s, leaf+":", k.path)
	}
	assert.Contains(t, s, "  timeout: 30m\n")
	assert.Contains(t, s, "clarification_timeout: 24h")
	assert.Contains(t, s, "  env: []")
	assert.True(t, strings.HasPrefix(s, "agent:\n  command: claude -p --model {model}"), s)
	assert.Less(t, strings.Index(s, "\nlimits:"), strings.Index(s, "\ngithub:"))
}

func TestCfgFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		30 * time.Minute:            "30m",
		24 * time.Hour:              "24h",
		90 * time.Minute:            "1h30m",
		90 * time.Second:            "1m30s",
		time.Hour + time.Second:     "1h0m1s",
		500 * time.Millisecond:      "500ms",
		10*time.Minute + 500*1e6:    "10m0.5s",
		100*time.Hour + time.Minute: "100h1m",
	} {
		assert.Equal(t, want, cfgFormatDuration(pipeline.Duration(d)))
		back, err := time.ParseDuration(want)
		require.NoError(t, err)
		assert.Equal(t, d, back)
	}
}

func FuzzParseConfig(f *testing.F) {
	for _, name := range []string{"design.yml", "full.yml"} {
		f.Add(readConfigFixture(f, name))
	}
	for _, s := range []string{
		"", "qa: yes\n", "agent:\n  comand: x\n", "limits:\n  qa_attempts: three\n",
		"max_parallel: 0x10\n", "agent:\n  env: [A, B, A]\n", "x: &a [*a]\nagent: *a\n",
		"agent: &a\n  timeout: 5m\nmodels: *a\n", "qa: true\n---\nqa: false\n", "? [a]\n: b\n",
		"agent:\n  command: \"claude '{model}\\\" x\"\n", "merge:\n  <<: {method: push}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig(data)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error is not a *ConfigError: %T %v", err, err)
			}
			if err.Error() == "" {
				t.Fatal("empty error text")
			}
			return
		}
		if verr := Validate(cfg); verr != nil {
			t.Fatalf("ParseConfig accepted what Validate refuses: %v\ninput: %q", verr, data)
		}
		out, err := Marshal(cfg)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		back, err := ParseConfig(out)
		if err != nil {
			t.Fatalf("ParseConfig(Marshal(c)): %v\n%s", err, out)
		}
		if !assert.ObjectsAreEqual(cfg, back) {
			t.Fatalf("round trip changed the configuration\nbefore %#v\nafter  %#v\n%s", cfg, back, out)
		}
	})
}
