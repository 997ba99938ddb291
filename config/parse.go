package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// This file reads .github/bazinga.yml (ARCHITECTURE.md §8). The document is walked as
// a yaml.Node tree rather than decoded into the struct, because decoding
// loses the line numbers an error must name, silently ignores unknown keys
// and accepts YAML 1.1 booleans such as "yes". One table (cfgKeys) drives
// parsing, Validate and Marshal, so the three cannot disagree about which
// keys exist or what values they take.

// ConfigError is one problem with the configuration, naming the key by its
// dotted path ("limits.qa_attempts") and, when it came from a file, the line.
type ConfigError struct {
	// File is the file the value came from ("bazinga.yml" for ParseConfig,
	// the name given to ParseConfigFile); empty for Validate of a Config built in code.
	File string
	// Line is 1-based; 0 when there is no line to point at.
	Line int
	// Key is the dotted path of the key; empty for document-level problems.
	Key string
	// Msg says what is wrong and what is wanted.
	Msg string
	// keyInMsg is set when Msg already names the key (unknown and duplicate
	// keys), so Error does not print it twice.
	keyInMsg bool
}

// Error formats the problem as `file line N: key: message`, leaving out the
// parts that are empty.
func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, " line %d", e.Line)
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Key != "" && !e.keyInMsg {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ParseConfig reads the contents of .github/bazinga.yml. It starts from
// DefaultConfig and overlays the keys present; every key is optional, and a
// key with no value (null) keeps its default, so a section whose keys are all
// commented out is fine. An empty file or one holding only comments gives the
// defaults.
//
// Every problem found is reported, not just the first: the error is a
// *ConfigError when there is one problem, otherwise an errors.Join of
// *ConfigError values in line order (use errors.As to reach them). On error
// the returned Config is the zero value and must not be used.
func ParseConfig(data []byte) (pipeline.Config, error) {
	return parseConfig(data, "bazinga.yml")
}

// ParseConfigFile is ParseConfig for the contents of a named file: errors
// name it instead of "bazinga.yml". Reading the file is the caller's job
// (local mode reads it from the base commit, the bot through the API), which
// keeps this package free of I/O.
func ParseConfigFile(name string, data []byte) (pipeline.Config, error) {
	c, _, err := parseConfigLines(data, name)
	return c, err
}

// ParseConfigFileKeys is ParseConfigFile that also says which keys the file
// sets: each one's dotted path ("tests.command") and its line. What the file
// leaves out keeps its default, and `bazinga config` says which is which.
func ParseConfigFileKeys(name string, data []byte) (pipeline.Config, map[string]int, error) {
	return parseConfigLines(data, name)
}

// Validate checks the values of a Config however it was built: command-line
// flags override the file (--max-parallel 0 must be refused), so the checks
// ParseConfig makes are repeated here, naming the key. Problems are reported
// in the order of the keys in the file, joined as ParseConfig joins them.
func Validate(c pipeline.Config) error {
	var errs []*ConfigError
	for _, k := range cfgKeys {
		for _, msg := range k.check(&c) {
			errs = append(errs, &ConfigError{Key: k.path, Msg: msg})
		}
	}
	return joinConfigErrors(errs)
}

// Marshal writes the whole effective configuration as YAML, every key
// included and in the order of ARCHITECTURE.md §8, so `bazinga config` can show what
// a run will use. It does not validate; ParseConfig reads its output back to
// the same Config.
func Marshal(c pipeline.Config) ([]byte, error) {
	root := cfgEncodeLevel(&c, cfgTree)
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("writing configuration: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("writing configuration: %w", err)
	}
	return buf.Bytes(), nil
}

// SplitCommand splits a command line into words the way a POSIX shell does,
// without expanding anything: words are separated by unquoted whitespace;
// single quotes keep everything up to the next single quote; double quotes
// keep everything up to the next unescaped double quote, where a backslash
// escapes \ " $ ` and newline and is otherwise kept; outside quotes a
// backslash keeps the next character; backslash-newline joins lines. Empty
// quotes give an empty word. An unbalanced quote or a trailing lone backslash
// is an error. The agent command is run without a shell, so this is the whole
// of the syntax it gets.
func SplitCommand(s string) ([]string, error) {
	var (
		words  []string
		cur    strings.Builder
		inWord bool
	)
	col := func(i int) int { return utf8.RuneCountInString(s[:i]) + 1 }
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch ch {
		case ' ', '\t', '\n', '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case '\\':
			if i+1 == len(s) {
				return nil, fmt.Errorf("lone backslash at the end (column %d)", col(i))
			}
			i++
			if s[i] == '\n' {
				continue // line continuation
			}
			cur.WriteByte(s[i])
			inWord = true
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unbalanced single quote at column %d", col(i))
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case '"':
			start := i
			inWord = true
			closed := false
			for i++; i < len(s); i++ {
				c := s[i]
				if c == '"' {
					closed = true
					break
				}
				if c == '\\' && i+1 < len(s) {
					switch s[i+1] {
					case '\\', '"', '$', '`':
						i++
						cur.WriteByte(s[i])
						continue
					case '\n':
						i++
						continue
					}
				}
				cur.WriteByte(c)
			}
			if !closed {
				return nil, fmt.Errorf("unbalanced double quote at column %d", col(start))
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// --- the key table ---------------------------------------------------------

// cfgKey is one leaf key of the file.
type cfgKey struct {
	path    string
	comment string // shown by Marshal after the value
	// decode sets the field from a node that is present and not null,
	// returning the problems found (the field is left alone then).
	decode func(c *pipeline.Config, n *yaml.Node, path string) []*ConfigError
	// check returns what is wrong with the field's current value.
	check func(c *pipeline.Config) []string
	// encode returns the value node Marshal writes.
	encode func(c *pipeline.Config) *yaml.Node
}

// cfgKeys lists every key in the order of ARCHITECTURE.md §8, then the keys the issues
// added (agent.env, github.*) in their sections.
var cfgKeys = []cfgKey{
	cfgCommandKey("agent.command", func(c *pipeline.Config) *string { return &c.Agent.Command },
		"split like a shell; {model} {role} {prompt_file} are filled in"),
	cfgAgentCLIKey("agent.cli", "auto (from the command) | claude | codex | gemini | aider | opencode | generic"),
	cfgDurationKey("agent.timeout", func(c *pipeline.Config) *pipeline.Duration { return &c.Agent.Timeout }, ""),
	cfgMaxDurationKey("agent.grace", func(c *pipeline.Config) *pipeline.Duration { return &c.Agent.Grace }, MaxAgentGrace,
		"it must fit in the engine's step grace with the commit and push after it",
		"after the timeout's SIGTERM, before SIGKILL"),
	cfgIntKey("agent.max_turns", func(c *pipeline.Config) *int { return &c.Agent.MaxTurns }, 0, MaxAgentTurns,
		" (0 = the CLI's default)", "turn cap for the CLIs that take one; 0 = the CLI's default"),
	cfgEnvKey("agent.env", func(c *pipeline.Config) *[]string { return &c.Agent.Env },
		"names of environment variables passed through to the agent"),
	// models.*: a key the file leaves out takes DefaultModels of the CLI.
	cfgModelKey("pm"),
	cfgModelKey("developer"),
	cfgModelKey("senior"),
	cfgModelKey("qa"),
	cfgModelKey("tech_lead"),
	cfgModelKey("investigator"),
	cfgModelKey("requirements"),
	cfgModelKey("validator"),
	cfgModelKey("escalation"),
	cfgStringKey("tests.command", func(c *pipeline.Config) *string { return &c.Tests.Command }, nil,
		"the test gate, the check of READY_* claims and BAZINGA validation"),
	cfgDurationKey("tests.timeout", func(c *pipeline.Config) *pipeline.Duration { return &c.Tests.Timeout }, ""),
	// --- baseline and harness-run checks (issue 13) ---
	cfgStringKey("tests.baseline", func(c *pipeline.Config) *pipeline.BaselineMode { return &c.Tests.Baseline }, pipeline.CheckBaselineMode,
		"a base already failing at session start: pause | accept | off"),
	cfgStringKey("tests.junit", func(c *pipeline.Config) *string { return &c.Tests.JUnit }, cfgCheckJUnitGlob,
		"optional glob of JUnit XML reports naming failing tests"),
	// --- end baseline ---
	cfgStringKey("build.command", func(c *pipeline.Config) *string { return &c.Build.Command }, nil,
		"optional; runs before the tests"),
	cfgIntKey("max_parallel", func(c *pipeline.Config) *int { return &c.MaxParallel }, 1, 64, "",
		"developer/senior steps in flight"),
	cfgBoolKey("qa", func(c *pipeline.Config) *bool { return &c.QA }, ""),
	cfgStringKey("merge.method", func(c *pipeline.Config) *pipeline.MergeMethod { return &c.Merge.Method }, cfgCheckMethod,
		"pull-request | push"),
	cfgIntKey("merge.required_approvals", func(c *pipeline.Config) *int { return &c.Merge.RequiredApprovals }, 0, 10, "",
		"human PR approvals needed before a group merges"),
	// --- merge.method pull-request (issue 11) ---
	cfgStringKey("merge.pr_method", func(c *pipeline.Config) *pipeline.PRMergeMethod { return &c.Merge.PRMethod }, cfgCheckPRMethod,
		"auto | merge | squash | rebase; auto takes the first the repository allows, in that order"),
	cfgDurationKey("merge.checks_timeout", func(c *pipeline.Config) *pipeline.Duration { return &c.Merge.ChecksTimeout },
		"how long the group PR's required checks may stay pending before the session pauses"),
	// --- end merge.method pull-request ---
	cfgDurationKey("clarification_timeout", func(c *pipeline.Config) *pipeline.Duration { return &c.ClarificationTimeout },
		"GitHub mode; local mode asks on the terminal"),
	cfgBoolKey("allow_workflow_changes", func(c *pipeline.Config) *bool { return &c.AllowWorkflowChanges },
		"may agents change .github/workflows/?"),
	// checkpoints (issue 13)
	cfgCheckpointsKey("checkpoints", func(c *pipeline.Config) *[]pipeline.CheckpointKind { return &c.Checkpoints },
		"wait for a human's approval: plan, phase"),
	cfgIntKey("limits.developer_iterations", func(c *pipeline.Config) *int { return &c.Limits.DeveloperIterations }, 1, 20, "", ""),
	cfgIntKey("limits.qa_attempts", func(c *pipeline.Config) *int { return &c.Limits.QAAttempts }, 1, 20, "", ""),
	cfgIntKey("limits.review_attempts", func(c *pipeline.Config) *int { return &c.Limits.ReviewAttempts }, 1, 20, "", ""),
	cfgIntKey("limits.investigation_iterations", func(c *pipeline.Config) *int { return &c.Limits.InvestigationIterations }, 0, 20,
		" (0 disables investigation)", "0 disables investigation"),
	cfgIntKey("limits.step_attempts", func(c *pipeline.Config) *int { return &c.Limits.StepAttempts }, 1, 20, "", ""),
	cfgIntKey("limits.high_finding_revisions", func(c *pipeline.Config) *int { return &c.Limits.HighFindingRevisions }, 1, 5, "",
		"revisions a HIGH review finding gets before a human decides"),
	// --- cost limits (issue 13 item 5) ---
	cfgUSDKey("limits.session_cost_usd", func(c *pipeline.Config) *float64 { return &c.Limits.SessionCostUSD },
		"pause when the session's reported cost reaches it; 0 = no limit"),
	cfgUSDKey("limits.step_cost_usd", func(c *pipeline.Config) *float64 { return &c.Limits.StepCostUSD },
		"pause when one step's reported cost is over it; 0 = no limit"),
	// --- end cost limits ---
	cfgStringKey("github.agent_workflow", func(c *pipeline.Config) *string { return &c.GitHub.AgentWorkflow }, cfgCheckWorkflow,
		"workflow file dispatched for each step"),
	cfgBoolKey("github.close_issue", func(c *pipeline.Config) *bool { return &c.GitHub.CloseIssue },
		"close the issue when BAZINGA is verified"),
	cfgStringKey("github.job_identity", func(c *pipeline.Config) *string { return &c.GitHub.JobIdentity }, cfgCheckBotLogin,
		"login whose result comments are trusted"),
	cfgStringKey("github.followup_label", func(c *pipeline.Config) *string { return &c.GitHub.FollowUpLabel }, cfgCheckFollowUpLabel,
		"open each follow-up as an issue with this label (e.g. bazinga-followup); empty: none"),
	// --- harness-run checks (issue 13) ---
	cfgChecksKey("checks", func(c *pipeline.Config) *[]pipeline.CheckConfig { return &c.Checks },
		"name: {command, required, timeout}; run after READY claims and before merges"),
	// --- end checks ---
}

// cfgLevel is one key of a mapping: a leaf (key set) or a section.
type cfgLevel struct {
	name     string
	key      *cfgKey
	children []*cfgLevel
}

// cfgTree is cfgKeys arranged as the file nests them, in table order.
var cfgTree = cfgBuildTree(cfgKeys)

func cfgBuildTree(keys []cfgKey) []*cfgLevel {
	var root []*cfgLevel
	for i := range keys {
		k := &keys[i]
		section, leaf, nested := strings.Cut(k.path, ".")
		if !nested {
			root = append(root, &cfgLevel{name: k.path, key: k})
			continue
		}
		var sec *cfgLevel
		for _, l := range root {
			if l.name == section {
				sec = l
			}
		}
		if sec == nil {
			sec = &cfgLevel{name: section}
			root = append(root, sec)
		}
		sec.children = append(sec.children, &cfgLevel{name: leaf, key: k})
	}
	return root
}

// --- typed keys ------------------------------------------------------------

func cfgStringKey[T ~string](path string, field func(*pipeline.Config) *T, check func(string) string, comment string) cfgKey {
	chk := func(v string) string {
		if strings.IndexByte(v, 0) >= 0 {
			// Nothing downstream (exec, the GitHub API) can carry a NUL.
			return fmt.Sprintf("contains a NUL character: %q", v)
		}
		if check == nil {
			return ""
		}
		return check(v)
	}
	return cfgKey{
		path:    path,
		comment: comment,
		decode: func(c *pipeline.Config, n *yaml.Node, path string) []*ConfigError {
			if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
				return cfgErrs(n.Line, path, "want a string, got %s%s", cfgDescribe(n), cfgQuoteHint(n))
			}
			if msg := chk(n.Value); msg != "" {
				return cfgErrs(n.Line, path, "%s", msg)
			}
			*field(c) = T(n.Value)
			return nil
		},
		check:  func(c *pipeline.Config) []string { return cfgMsgs(chk(string(*field(c)))) },
		encode: func(c *pipeline.Config) *yaml.Node { return cfgStringNode(string(*field(c))) },
	}
}

// cfgModelKey is models.<name>.
func cfgModelKey(name string) cfgKey {
	if modelField(&pipeline.ModelsConfig{}, name) == nil {
		panic("no models key " + name)
	}
	return cfgStringKey("models."+name, func(c *pipeline.Config) *string { return modelField(&c.Models, name) }, cfgCheckModel, "")
}

func cfgCommandKey(path string, field func(*pipeline.Config) *string, comment string) cfgKey {
	return cfgStringKey(path, field, cfgCheckAgentCommand, comment)
}

func cfgIntKey(path string, field func(*pipeline.Config) *int, lo, hi int, note, comment string) cfgKey {
	want := fmt.Sprintf("want a whole number from %d to %d%s", lo, hi, note)
	return cfgKey{
		path:    path,
		comment: comment,
		decode: func(c *pipeline.Config, n *yaml.Node, path string) []*ConfigError {
			if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
				return cfgErrs(n.Line, path, "%s, got %s", want, cfgDescribe(n))
			}
			v, err := cfgParseInt(n.Value)
			if err != nil || v < int64(lo) || v > int64(hi) {
				return cfgErrs(n.Line, path, "%s, got %s", want, n.Value)
			}
			*field(c) = int(v)
			return nil
		},
		check: func(c *pipeline.Config) []string {
			if v := *field(c); v < lo || v > hi {
				return []string{fmt.Sprintf("%s, got %d", want, v)}
			}
			return nil
		},
		encode: func(c *pipeline.Config) *yaml.Node {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(*field(c))}
		},
	}
}

// cfgParseInt reads what yaml.v3 tags !!int: base 0 covers 0x10, 0o17, 0b11
// and 1_000, but a leading zero is decimal as YAML 1.2 says ("010" is 10),
// not Go's octal.
func cfgParseInt(s string) (int64, error) {
	digits := strings.TrimLeft(s, "+-")
	if len(digits) > 1 && digits[0] == '0' && strings.Trim(digits, "0123456789") == "" {
		return strconv.ParseInt(s, 10, 64)
	}
	return strconv.ParseInt(s, 0, 64)
}

func cfgBoolKey(path string, field func(*pipeline.Config) *bool, comment string) cfgKey {
	return cfgKey{
		path:    path,
		comment: comment,
		decode: func(c *pipeline.Config, n *yaml.Node, path string) []*ConfigError {
			if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" {
				switch strings.ToLower(n.Value) {
				case "true":
					*field(c) = true
					return nil
				case "false":
					*field(c) = false
					return nil
				}
			}
			hint := ""
			if n.Kind == yaml.ScalarNode {
				switch strings.ToLower(n.Value) {
				case "yes", "no", "on", "off", "y", "n":
					// yaml.v3 would turn these into booleans when decoding
					// into a bool; the file follows YAML 1.2 so it reads the
					// same in every tool.
					hint = " (YAML 1.2: only true and false are booleans, not yes/no/on/off)"
				case "true", "false":
					hint = " (write it without quotes)"
				}
			}
			return cfgErrs(n.Line, path, "want true or false, got %s%s", cfgDescribe(n), hint)
		},
		check: func(*pipeline.Config) []string { return nil },
		encode: func(c *pipeline.Config) *yaml.Node {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(*field(c))}
		},
	}
}

// cfgUSDKey is an amount of US dollars: a plain number (0.5, 20, 1_000)
// from 0 (no limit) to MaxCostLimitUSD, kept to the millionth the engine
// counts in.
func cfgUSDKey(path string, field func(*pipeline.Config) *float64, comment string) cfgKey {
	want := fmt.Sprintf("want an amount of US dollars from 0 (no limit) to %d, such as 5 or 2.50", pipeline.MaxCostLimitUSD)
	check := func(v float64) string {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > pipeline.MaxCostLimitUSD {
			return fmt.Sprintf("%s, got %v", want, v)
		}
		return ""
	}
	return cfgKey{
		path:    path,
		comment: comment,
		decode: func(c *pipeline.Config, n *yaml.Node, path string) []*ConfigError {
			if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
				hint := ""
				if n.Kind == yaml.ScalarNode && strings.HasPrefix(strings.TrimSpace(n.Value), "$") {
					hint = " (write the number without the $)"
				}
				return cfgErrs(n.Line, path, "%s, got %s%s", want, cfgDescribe(n), hint)
			}
			v, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
			if err != nil {
				if i, ierr := cfgParseInt(n.Value); ierr == nil {
					v, err = float64(i), nil
				}
			}
			if err != nil {
				return cfgErrs(n.Line, path, "%s, got %s", want, n.Value)
			}
			if msg := check(v); msg != "" {
				return cfgErrs(n.Line, path, "%s", msg)
			}
			*field(c) = math.Round(v*1e6) / 1e6
			return nil
		},
		check: func(c *pipeline.Config) []string { return cfgMsgs(check(*field(c))) },
		encode: func(c *pipeline.Config) *yaml.Node {
			v := *field(c)
			tag := "!!float"
			if v == math.Trunc(v) {
				tag = "!!int"
			}
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: strconv.FormatFloat(v, 'f', -1, 64)}
		},
	}
}

const cfgWantDuration = `want a Go duration such as "30m", "90s" or "1h30m"`

func cfgDurationKey(path string, field func(*pipeline.Config) *pipeline.Duration, comment string) cfgKey {
	return cfgKey{
		path:    path,
		comment: comment,
		decode: func(c *pipeline.Config, n *yaml.Node, path string) []*ConfigError {
			if n.Kind != yaml.ScalarNode {
				return cfgErrs(n.Line, path, "%s, got %s", cfgWantDuration, cfgDescribe(n))
			}
			d, err := time.ParseDuration(n.Value)
			if err != nil {
				hint := ""
				if n.ShortTag() == "!!int" || n.ShortTag() == "!!float" {
					hint = " (a unit is required)"
				}
				return cfgErrs(n.Line, path, "%s, got %s%s", cfgWantDuration, cfgDescribe(n), hint)
			}
			if msg := cfgCheckDuration(pipeline.Duration(d)); msg != "" {
				return cfgErrs(n.Line, path, "%s", msg)
			}
			*field(c) = pipeline.Duration(d)
			return nil
		},
		check:  func(c *pipeline.Config) []string { return cfgMsgs(cfgCheckDuration(*field(c))) },
		encode: func(c *pipeline.Config) *yaml.Node { return cfgStringNode(cfgFormatDuration(*field(c))) },
	}
}

// MaxAgentGrace bounds agent.grace: after the grace the harness still
// commits and pushes the partial work, all within StepGrace.
const MaxAgentGrace = 5 * time.Minute

// cfgMaxDurationKey is a duration key with an upper bound.
func cfgMaxDurationKey(path string, field func(*pipeline.Config) *pipeline.Duration, max time.Duration, why, comment string) cfgKey {
	k := cfgDurationKey(path, field, comment)
	over := func(d pipeline.Duration) string {
		if d.D() > max {
			return fmt.Sprintf("want at most %s (%s), got %q", cfgFormatDuration(pipeline.Duration(max)), why, cfgFormatDuration(d))
		}
		return ""
	}
	decode, check := k.decode, k.check
	k.decode = func(c *pipeline.Config, n *yaml.Node, path string) []*ConfigError {
		old := *field(c)
		if errs := decode(c, n, path); len(errs) > 0 {
			return errs
		}
		if msg := over(*field(c)); msg != "" {
			*field(c) = old
			return cfgErrs(n.Line, path, "%s", msg)
		}
		return nil
	}
	k.check = func(c *pipeline.Config) []string {
		if msgs := check(c); len(msgs) > 0 {
			return msgs
		}
		return cfgMsgs(over(*field(c)))
	}
	return k
}

func cfgEnvKey(path string, field func(*pipeline.Config) *[]string, comment string) cfgKey {
	return cfgListKey(path, field, comment, cfgList[string]{
		wantList: "want a list of environment variable names",
		wantItem: "want an environment variable name",
		parse:    func(v string) (string, string) { return v, cfgCheckEnvName(v) },
		check:    cfgCheckEnvName,
		name:     func(v string) string { return v },
	})
}

// cfgList describes a list key of distinct strings: what is wanted (for
// errors), how an item parses (a value, or a message naming what is wrong),
// how a value is checked again (Validate), and its name in the file.
type cfgList[T comparable] struct {
	wantList, wantItem string
	parse              func(string) (T, string)
	check              func(T) string
	name               func(T) string
	// flow writes the list inline even when it has items ([plan, phase]);
	// an empty list is always written [] rather than a bare key.
	flow bool
}

// cfgListKey is a key holding a list of distinct values; an item listed
// twice is an error naming both lines.
func cfgListKey[T comparable](path string, field func(*pipeline.Config) *[]T, comment string, l cfgList[T]) cfgKey {
	return cfgKey{
		path:    path,
		comment: comment,
		decode: func(c *pipeline.Config, n *yaml.Node, path string) []*ConfigError {
			if n.Kind != yaml.SequenceNode {
				hint := ""
				if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
					hint = fmt.Sprintf(" (write a list: [%s])", n.Value)
				}
				return cfgErrs(n.Line, path, "%s, got %s%s", l.wantList, cfgDescribe(n), hint)
			}
			var (
				errs   []*ConfigError
				values []T
				seen   = map[T]int{}
			)
			for _, e := range n.Content {
				e = cfgResolve(e)
				if e.Kind != yaml.ScalarNode || e.ShortTag() != "!!str" {
					errs = append(errs, cfgErrs(e.Line, path, "%s, got %s", l.wantItem, cfgDescribe(e))...)
					continue
				}
				v, msg := l.parse(e.Value)
				if msg != "" {
					errs = append(errs, cfgErrs(e.Line, path, "%s", msg)...)
					continue
				}
				if first, dup := seen[v]; dup {
					errs = append(errs, cfgErrs(e.Line, path, "%q is listed twice (lines %d and %d)", e.Value, first, e.Line)...)
					continue
				}
				seen[v] = e.Line
				values = append(values, v)
			}
			if len(errs) > 0 {
				return errs
			}
			*field(c) = values // nil when the list is empty, so a round trip is exact
			return nil
		},
		check: func(c *pipeline.Config) []string {
			var msgs []string
			seen := map[T]bool{}
			for _, v := range *field(c) {
				if msg := l.check(v); msg != "" {
					msgs = append(msgs, msg)
				} else if seen[v] {
					msgs = append(msgs, fmt.Sprintf("%q is listed twice", l.name(v)))
				}
				seen[v] = true
			}
			return msgs
		},
		encode: func(c *pipeline.Config) *yaml.Node {
			seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			if l.flow || len(*field(c)) == 0 {
				seq.Style = yaml.FlowStyle // "env: []" rather than a bare "env:"
			}
			for _, v := range *field(c) {
				seq.Content = append(seq.Content, cfgStringNode(l.name(v)))
			}
			return seq
		},
	}
}

// --- checkpoints (issue 13) --------------------------------------------------

// cfgCheckpointsKey is a list of checkpoint kinds ("checkpoints: [plan, phase]").
func cfgCheckpointsKey(path string, field func(*pipeline.Config) *[]pipeline.CheckpointKind, comment string) cfgKey {
	known := make([]string, 0, 2)
	for _, k := range pipeline.CheckpointKinds() {
		known = append(known, k.String())
	}
	want := "want a list of checkpoints: " + strings.Join(known, ", ")
	return cfgListKey(path, field, comment, cfgList[pipeline.CheckpointKind]{
		wantList: want,
		wantItem: want,
		parse: func(v string) (pipeline.CheckpointKind, string) {
			k, err := pipeline.ParseCheckpointKind(v)
			if err == nil && slices.Contains(pipeline.CheckpointKinds(), k) {
				return k, ""
			}
			if best := cfgClosest(v, known); best != "" {
				return k, fmt.Sprintf("unknown checkpoint %q; did you mean %q?", v, best)
			}
			return k, fmt.Sprintf("unknown checkpoint %q (known: %s)", v, strings.Join(known, ", "))
		},
		check: func(k pipeline.CheckpointKind) string {
			if k != pipeline.CheckpointPlan && k != pipeline.CheckpointPhase {
				return fmt.Sprintf("unknown checkpoint %s (known: %s)", k, strings.Join(known, ", "))
			}
			return ""
		},
		name: pipeline.CheckpointKind.String,
		flow: true,
	})
}

// --- value checks (shared by ParseConfig and Validate) ----------------------

func cfgMsgs(msg string) []string {
	if msg == "" {
		return nil
	}
	return []string{msg}
}

func cfgCheckDuration(d pipeline.Duration) string {
	if d <= 0 {
		return fmt.Sprintf("want a positive duration such as \"30m\", got %q", time.Duration(d).String())
	}
	return ""
}

func cfgCheckModel(s string) string {
	if s == "" {
		return "want a model name, got an empty string"
	}
	if strings.IndexFunc(s, unicode.IsSpace) >= 0 {
		return fmt.Sprintf("want a model name without spaces, got %q", s)
	}
	return ""
}

func cfgCheckMethod(s string) string {
	switch pipeline.MergeMethod(s) {
	case pipeline.MergePush, pipeline.MergePullRequest:
		return ""
	}
	hint := ""
	if cfgCheckPRMethod(s) == "" {
		hint = fmt.Sprintf(" (%s is a merge.pr_method: how GitHub merges the group PR)", s)
	}
	return fmt.Sprintf("want %q or %q, got %q%s", pipeline.MergePush, pipeline.MergePullRequest, s, hint)
}

// cfgCheckPRMethod: merge.pr_method is auto or one of GitHub's merge methods.
func cfgCheckPRMethod(s string) string {
	switch pipeline.PRMergeMethod(s) {
	case pipeline.PRMethodAuto, pipeline.PRMethodMerge, pipeline.PRMethodSquash, pipeline.PRMethodRebase:
		return ""
	}
	return fmt.Sprintf("want %q, %q, %q or %q, got %q", pipeline.PRMethodAuto, pipeline.PRMethodMerge, pipeline.PRMethodSquash, pipeline.PRMethodRebase, s)
}

func cfgCheckWorkflow(s string) string {
	switch {
	case s == "":
		return "want a workflow file name such as \"bazinga-agent.yml\", got an empty string"
	case strings.ContainsAny(s, `/\`):
		return fmt.Sprintf("want the workflow's file name only (it lives in .github/workflows/), got %q", s)
	case strings.IndexFunc(s, unicode.IsSpace) >= 0,
		!strings.HasSuffix(s, ".yml") && !strings.HasSuffix(s, ".yaml"):
		return fmt.Sprintf("want a workflow file name ending in .yml or .yaml, got %q", s)
	}
	return ""
}

func cfgCheckLogin(s string) string {
	if s == "" || strings.IndexFunc(s, unicode.IsSpace) >= 0 {
		return fmt.Sprintf("want a GitHub login such as \"github-actions[bot]\", got %q", s)
	}
	return ""
}

// cfgCheckBotLogin: the job identity's result comments are trusted, so it
// must be a bot account (an App's or github-actions[bot]): a person's login
// would let that person, or whoever holds their token, post results.
func cfgCheckBotLogin(s string) string {
	if msg := cfgCheckLogin(s); msg != "" {
		return msg
	}
	if !strings.HasSuffix(s, "[bot]") {
		return fmt.Sprintf("want a bot's login ending in [bot], such as \"github-actions[bot]\" or \"my-app[bot]\": its comments are trusted as step results; got %q", s)
	}
	return ""
}

// cfgPlaceholders are the names the agent runner fills in agent.command.
var cfgPlaceholders = []string{"model", "role", "prompt_file"}

// cfgPlaceholderRE matches what looks like a placeholder. Dashes and dots are
// included so "{prompt-file}" is reported rather than passed on literally;
// JSON such as '{"a":1}' and find's "{}" do not match.
var cfgPlaceholderRE = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_.-]*)\}`)

func cfgCheckAgentCommand(s string) string {
	words, err := SplitCommand(s)
	if err != nil {
		return fmt.Sprintf("cannot split it like a shell: %v", err)
	}
	if len(words) == 0 {
		return "want the command that runs an agent, got an empty string"
	}
	if words[0] == "" {
		return "the program name (first word) is empty"
	}
	for _, w := range words {
		for _, m := range cfgPlaceholderRE.FindAllStringSubmatch(w, -1) {
			if !cfgContains(cfgPlaceholders, m[1]) {
				msg := fmt.Sprintf("unknown placeholder %s (known: {model}, {role}, {prompt_file})", m[0])
				if best := cfgClosest(m[1], cfgPlaceholders); best != "" {
					msg = fmt.Sprintf("unknown placeholder %s; did you mean {%s}?", m[0], best)
				}
				return msg
			}
		}
	}
	return ""
}

var cfgEnvNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func cfgCheckEnvName(s string) string {
	if !cfgEnvNameRE.MatchString(s) {
		return fmt.Sprintf("%q is not a valid environment variable name (letters, digits and _, not starting with a digit)", s)
	}
	// The runner sets BAZINGA_ROLE, BAZINGA_PROMPT_FILE and the rest itself,
	// and the server's own secrets (BAZINGA_PRIVATE_KEY, …) share the prefix:
	// none of them may be passed through. Case-insensitive, as on Windows.
	up := strings.ToUpper(s)
	if strings.HasPrefix(up, "BAZINGA_") {
		return fmt.Sprintf("%q cannot be passed through: the harness sets BAZINGA_* variables itself", s)
	}
	// The agent runs beside nothing that can write to the repository:
	// Action inputs (the GitHub token arrives as INPUT_GITHUB-TOKEN), the
	// runner's ACTIONS_* tokens and anything named like a credential stay
	// out, except the model keys an agent needs to work at all.
	if cfgContains(ModelKeys, s) {
		return ""
	}
	for _, p := range []struct{ prefix, why string }{
		{"INPUT_", "INPUT_* variables are the Action's inputs, such as its GitHub token"},
		{"ACTIONS_", "ACTIONS_* variables are the Actions runner's own tokens and URLs"},
	} {
		if strings.HasPrefix(up, p.prefix) {
			return fmt.Sprintf("%q cannot be passed through: %s", s, p.why)
		}
	}
	if word := cfgCredentialWord(s); word != "" {
		return fmt.Sprintf("%q cannot be passed through: it looks like a credential (*%s*); of those only model keys are passed (%s)",
			s, word, strings.Join(ModelKeys, ", "))
	}
	return ""
}

// CheckAgentEnvName reports why a name may not be passed to the agent
// (agent.env), or nil. The agent runner checks its pass-through names with it
// too, whatever built its configuration.
func CheckAgentEnvName(name string) error {
	if msg := cfgCheckEnvName(name); msg != "" {
		return errors.New(msg)
	}
	return nil
}

// --- walking the document --------------------------------------------------

func parseConfig(data []byte, file string) (pipeline.Config, error) {
	c, _, err := parseConfigLines(data, file)
	return c, err
}

func parseConfigLines(data []byte, file string) (pipeline.Config, map[string]int, error) {
	p := &cfgParser{cfg: pipeline.DefaultConfig(), set: map[string]int{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := cfgDecode(dec, &doc); err != nil {
		if errors.Is(err, io.EOF) { // empty, or only comments
			return p.cfg, p.set, nil
		}
		return pipeline.Config{}, nil, cfgWithFile(cfgSyntaxError(err), file)
	}
	var extra yaml.Node
	if err := cfgDecode(dec, &extra); err == nil {
		p.add(cfgErrs(extra.Line, "", "a second YAML document starts here; the file holds one")...)
	} else if !errors.Is(err, io.EOF) {
		p.add(cfgSyntaxError(err))
	}
	if len(doc.Content) > 0 {
		root := cfgResolve(doc.Content[0])
		switch {
		case cfgIsNull(root):
		case root.Kind != yaml.MappingNode:
			p.add(cfgErrs(root.Line, "", "the top level must be a mapping of keys such as \"agent:\" and \"max_parallel:\", got %s", cfgDescribe(root))...)
		default:
			p.mapping(root, "", cfgTree)
		}
	}
	if len(p.errs) > 0 {
		sort.SliceStable(p.errs, func(i, j int) bool { return p.errs[i].Line < p.errs[j].Line })
		return pipeline.Config{}, nil, cfgWithFile(joinConfigErrors(p.errs), file)
	}
	p.defaultModels()
	return p.cfg, p.set, nil
}

// defaultModels gives each models key the file leaves out the default of
// the configuration's CLI (DefaultConfig's are Claude's).
func (p *cfgParser) defaultModels() {
	def := pipeline.DefaultModels(AgentCLI(p.cfg))
	for _, name := range modelKeyNames {
		if _, set := p.set["models."+name]; !set {
			*modelField(&p.cfg.Models, name) = *modelField(&def, name)
		}
	}
}

// cfgDecode guards against a panic inside the YAML library: a configuration
// file is user input, and a bad one must be an error, not a crashed bot.
func cfgDecode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: cannot read the document: %v", r)
		}
	}()
	return dec.Decode(n)
}

var cfgSyntaxRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// cfgSyntaxError turns yaml.v3's "yaml: line 3: …" into a ConfigError with the line.
func cfgSyntaxError(err error) *ConfigError {
	msg := err.Error()
	if m := cfgSyntaxRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &ConfigError{Line: line, Msg: "invalid YAML: " + m[2]}
	}
	return &ConfigError{Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

type cfgParser struct {
	cfg  pipeline.Config
	errs []*ConfigError
	// set holds the paths of the leaf keys the file gives a value, and their lines.
	set map[string]int
}

func (p *cfgParser) add(errs ...*ConfigError) { p.errs = append(p.errs, errs...) }

// mapping overlays the keys of one mapping node; prefix is the dotted path
// of the mapping ("" or "agent.").
func (p *cfgParser) mapping(n *yaml.Node, prefix string, known []*cfgLevel) {
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := cfgResolve(n.Content[i]), cfgResolve(n.Content[i+1])
		if kn.Kind != yaml.ScalarNode {
			p.add(cfgErrs(kn.Line, strings.TrimSuffix(prefix, "."), "keys must be plain names, got %s", cfgDescribe(kn))...)
			continue
		}
		path := prefix + kn.Value
		if kn.Value == "<<" && kn.ShortTag() == "!!merge" {
			p.add(cfgErrs(kn.Line, strings.TrimSuffix(prefix, "."), "merge keys (<<) are not supported; write the keys out")...)
			continue
		}
		if first, dup := seen[kn.Value]; dup {
			p.add(&ConfigError{Line: kn.Line, Key: path, keyInMsg: true,
				Msg: fmt.Sprintf("duplicate key %q (lines %d and %d)", path, first, kn.Line)})
			continue
		}
		seen[kn.Value] = kn.Line
		var lvl *cfgLevel
		for _, l := range known {
			if l.name == kn.Value {
				lvl = l
			}
		}
		if lvl == nil {
			p.add(&ConfigError{Line: kn.Line, Key: path, keyInMsg: true, Msg: cfgUnknownKey(prefix, kn.Value, known)})
			continue
		}
		if cfgIsNull(vn) {
			continue // "key:" with nothing after it keeps the default
		}
		if lvl.key != nil {
			p.set[path] = kn.Line
			p.add(lvl.key.decode(&p.cfg, vn, path)...)
			continue
		}
		if vn.Kind != yaml.MappingNode {
			p.add(cfgErrs(vn.Line, path, "want a mapping of keys (%s), got %s", cfgNames(lvl.children), cfgDescribe(vn))...)
			continue
		}
		p.mapping(vn, path+".", lvl.children)
	}
}

// cfgUnknownKey says a key is unknown, suggesting the sibling it is an
// obvious typo of, or the one key elsewhere with that exact name ("method:"
// at the top → "merge.method"), or else listing the keys allowed there.
func cfgUnknownKey(prefix, name string, known []*cfgLevel) string {
	msg := fmt.Sprintf("unknown key %q", prefix+name)
	if best := cfgClosest(name, cfgLevelNames(known)); best != "" {
		return fmt.Sprintf("%s; did you mean %q?", msg, prefix+best)
	}
	var elsewhere []string
	for _, k := range cfgKeys {
		if k.path[strings.LastIndexByte(k.path, '.')+1:] == name || k.path == name {
			elsewhere = append(elsewhere, k.path)
		}
	}
	if len(elsewhere) == 1 {
		return fmt.Sprintf("%s; did you mean %q?", msg, elsewhere[0])
	}
	return fmt.Sprintf("%s (known here: %s)", msg, cfgNames(known))
}

func cfgLevelNames(ls []*cfgLevel) []string {
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.name
	}
	return names
}

func cfgNames(ls []*cfgLevel) string { return strings.Join(cfgLevelNames(ls), ", ") }

// cfgClosest returns the candidate that name is an obvious typo of: the
// nearest by edit distance (ignoring case, '-' for '_'), if that is at most 2
// and less than half the name, first in table order on a tie; else "".
func cfgClosest(name string, candidates []string) string {
	norm := strings.ReplaceAll(strings.ToLower(name), "-", "_")
	best, bestD := "", 3
	for _, c := range candidates {
		d := cfgEditDistance(norm, c)
		if d < bestD && 2*d < utf8.RuneCountInString(c) {
			best, bestD = c, d
		}
	}
	return best
}

// cfgEditDistance is the Levenshtein distance between a and b, in runes.
func cfgEditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// cfgResolve follows an alias to its anchored node. Anchors and aliases are
// accepted; the walk has a fixed depth, so a self-referencing alias cannot
// make it loop.
func cfgResolve(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func cfgIsNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// cfgDescribe names a value for an error: a list, a mapping, a quoted string,
// or a plain number/boolean as written.
func cfgDescribe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		v := n.Value
		if utf8.RuneCountInString(v) > 60 {
			v = string([]rune(v)[:57]) + "..."
		}
		switch n.ShortTag() {
		case "!!str":
			return strconv.Quote(v)
		case "!!null":
			return "null"
		case "!!int", "!!float", "!!bool":
			return v
		}
		return fmt.Sprintf("%s %q", n.ShortTag(), v)
	}
	return "an unresolved alias"
}

// cfgQuoteHint suggests quoting a number or boolean given where a string is
// wanted ("job_identity: 12345").
func cfgQuoteHint(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode {
		return ""
	}
	switch n.ShortTag() {
	case "!!int", "!!float", "!!bool":
		return fmt.Sprintf(" (quote it if you mean the string: %q)", n.Value)
	}
	return ""
}

func cfgErrs(line int, key, format string, args ...any) []*ConfigError {
	return []*ConfigError{{Line: line, Key: key, Msg: fmt.Sprintf(format, args...)}}
}

func cfgContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// joinConfigErrors returns nil, the one error, or all of them joined.
func joinConfigErrors(errs []*ConfigError) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	list := make([]error, len(errs))
	for i, e := range errs {
		list[i] = e
	}
	return errors.Join(list...)
}

// cfgWithFile sets the file name on every ConfigError inside err.
func cfgWithFile(err error, file string) error {
	var walk func(error)
	walk = func(e error) {
		if ce, ok := e.(*ConfigError); ok {
			ce.File = file
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
		}
	}
	walk(err)
	return err
}

// --- writing ---------------------------------------------------------------

func cfgEncodeLevel(c *pipeline.Config, levels []*cfgLevel) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, l := range levels {
		k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: l.name}
		var v *yaml.Node
		if l.key != nil {
			v = l.key.encode(c)
			if l.key.comment != "" {
				// On the key, so a block list's comment sits after "env:".
				k.LineComment = "# " + l.key.comment
			}
		} else {
			v = cfgEncodeLevel(c, l.children)
		}
		m.Content = append(m.Content, k, v)
	}
	return m
}

func cfgStringNode(s string) *yaml.Node {
	n := &yaml.Node{}
	n.SetString(s) // the encoder quotes it when it would read back as another type
	return n
}

// cfgFormatDuration writes a duration the way people write it in the file:
// "30m" rather than time.Duration's "30m0s".
func cfgFormatDuration(d pipeline.Duration) string { return ShortDuration(time.Duration(d)) }

// ShortDuration writes a duration as the configuration does: "30m", "1h",
// "300ms", rather than time.Duration's "30m0s", "1h0m0s".
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
		if strings.HasSuffix(s, "h0m") {
			s = strings.TrimSuffix(s, "0m")
		}
	}
	return s
}
