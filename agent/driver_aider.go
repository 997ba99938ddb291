package agent

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// aiderDriver runs aider (PyPI aider-chat) for one message: `aider
// --message-file <prompt> --yes-always`, which sends the message, applies the
// reply's edits and exits (aider/main.py, "Completed --message-file").
//
// aider prints plain text: the model's reply, the edits it applied, and
// after every model call a usage report (aider/coders/base_coder.py,
// calculate_and_show_tokens_and_cost). It has no final answer apart from that
// transcript, so FinalAnswer is false: the result comes from the result file
// (BAZINGA_RESULT_FILE, in the working copy, which aider writes as an edit),
// else from the last JSON object in the output, as for a generic command.
// That output holds the model's words and what aider's own lint and test
// commands printed; whatever reaches it can choose the status when no result
// file is written.
//
// What aider cannot express: it has no tool permissions. With --yes-always it
// applies every edit the model asks for, and it never runs the shell commands
// the model suggests (they need an explicit yes, which --yes-always does not
// give), so no role can run tests through it. Roles that may not edit run in
// ask mode (--chat-mode ask), where aider answers without editing; a user's
// own --edit-format applies to every role, and whatever such a step changes
// is discarded by the harness anyway (stepexec keeps only implementers' work).
//
// Commits: aider commits every edit it applies (--auto-commits) and commits
// a dirty working copy before editing (--dirty-commits), both on by default.
// The harness commits the working copy itself after the step, with the
// step's trailer, and discards what a review step changed by resetting to
// HEAD: commits aider made would be pushed with the branch and would survive
// that reset. So the driver turns both off, and Check refuses them.
//
// Files: aider keeps its chat and input history in the repository root by
// default; the driver puts them in the step's own directory. Its repo-map
// cache (.aider.tags.cache.v4/) stays in the root, so aider's default of
// adding ".aider*" to .gitignore is left on: the first aider step adds that
// one line (kept when an implementer's work is committed), and no cache is
// ever committed.
type aiderDriver struct{}

func init() { register(aiderDriver{}) }

func (aiderDriver) Name() string      { return "aider" }
func (aiderDriver) FinalAnswer() bool { return false }

// UsageAider names aider's usage report as a step's usage source.
const UsageAider = "aider"

// aiderPromptFile is the prompt file runOnce writes in the step's directory
// (Invoke.Dir); --message-file points at it when the command names none.
const aiderPromptFile = "prompt.md"

func (aiderDriver) Check(args []string) []string {
	var problems []string
	if hasFlag(args, "--message", "--msg", "-m") {
		problems = append(problems, "aider --message sends that text, not bazinga's prompt; use --message-file {prompt_file} (or leave both out: bazinga adds it)")
	}
	if file, ok := flagValue(args, "--message-file", "-f"); ok && !strings.Contains(file, PlaceholderPromptFile) {
		problems = append(problems, fmt.Sprintf("aider --message-file %q is not bazinga's prompt; use --message-file %s (or leave it out: bazinga adds it)", file, PlaceholderPromptFile))
	}
	for _, f := range []string{"--gui", "--browser", "--copy-paste", "--watch-files"} {
		if hasFlag(args, f) {
			problems = append(problems, fmt.Sprintf("aider %s waits for a person; leave it out", f))
		}
	}
	for _, f := range []string{"--auto-commits", "--dirty-commits"} {
		if hasFlag(args, f) {
			problems = append(problems, fmt.Sprintf("aider %s makes commits of its own, which would be pushed with the branch and would survive the harness discarding a review step's changes; leave it out (bazinga commits the step itself)", f))
		}
	}
	if hasFlag(args, "--pretty") {
		problems = append(problems, "aider --pretty colours its output with terminal codes that hide its usage report and errors; leave it out (bazinga passes --no-pretty)")
	}
	return problems
}

func (aiderDriver) Invocation(args []string, s Invoke) (Invocation, error) {
	var extra []string
	add := func(flag string, also ...string) {
		if !hasFlag(args, append([]string{flag}, also...)...) {
			extra = append(extra, flag)
		}
	}
	// Answer every question (never the shell-command ones), plain output,
	// one report per model call, no commits, no network on the side.
	add("--yes-always")
	add("--no-pretty", "--pretty")
	add("--no-stream", "--stream")
	add("--no-auto-commits", "--auto-commits")
	add("--no-dirty-commits", "--dirty-commits")
	add("--no-check-update", "--check-update")
	add("--no-show-release-notes", "--show-release-notes")
	add("--no-analytics", "--analytics", "--analytics-disable")
	add("--no-suggest-shell-commands", "--suggest-shell-commands")
	add("--no-detect-urls", "--detect-urls")
	if !hasFlag(args, "--chat-history-file") {
		extra = append(extra, "--chat-history-file", filepath.Join(s.Dir, "aider.chat.history.md"))
	}
	if !hasFlag(args, "--input-history-file") {
		extra = append(extra, "--input-history-file", filepath.Join(s.Dir, "aider.input.history"))
	}
	if s.Model != "" && !hasFlag(args, "--model") {
		extra = append(extra, "--model", s.Model)
	}
	if s.Access != AccessEdit && !hasFlag(args, "--edit-format", "--chat-mode", "--architect") {
		// Answers, no edits. (Nothing a review step changes is kept.)
		extra = append(extra, "--chat-mode", "ask")
	}
	if !hasFlag(args, "--message-file", "-f", "--message", "--msg", "-m") {
		extra = append(extra, "--message-file", filepath.Join(s.Dir, aiderPromptFile))
	}
	// aider's file arguments are positional: the flags go right after the
	// program, before them.
	return Invocation{Args: insertFlags(args, nil, extra...)}, nil
}

func (aiderDriver) NewReader() OutputReader { return &aiderReader{text: newTextReader()} }

// aiderReader keeps the end of the output for the result (as the generic
// driver does) and reads aider's usage reports and API errors line by line.
// It has no Write: lines are what it needs.
type aiderReader struct {
	text *textReader
	// usage: tokens are per model call (summed); the cost's "session"
	// figure is the running total (the last one wins).
	usage     pipeline.Usage
	reports   int
	cost      float64
	costSeen  bool
	usageBad  string
	lastError *aiderError
}

type aiderError struct {
	class string // litellm's exception class, when its line was seen
	desc  string // aider's own description of it
}

var (
	// "Tokens: 12k sent, 1.6k cache write, 2,728 cache hit, 345 received."
	// (format_tokens: 999, 1.2k, 12k; older versions: 12,345).
	aiderTokensRe = regexp.MustCompile(`^Tokens: ([0-9][0-9.,]*[kKmM]?) sent(?:, ([0-9][0-9.,]*[kKmM]?) cache write)?(?:, ([0-9][0-9.,]*[kKmM]?) cache hit)?, ([0-9][0-9.,]*[kKmM]?) received\.`)
	// "Cost: $0.0069 message, $0.05 session." ("request" in older versions)
	aiderCostRe = regexp.MustCompile(`Cost: \$([0-9][0-9.,]*) (?:message|request), \$([0-9][0-9.,]*) session\.`)
	// str(litellm exception): "litellm.RateLimitError: AnthropicException - …"
	aiderLitellmRe = regexp.MustCompile(`^(?:Unexpected error: )?(?:[A-Za-z]+: )?litellm\.([A-Za-z]+):`)
)

// aiderDescriptions are aider's own words for litellm's exceptions
// (aider/exceptions.py), by the failure they mean.
var aiderDescriptions = map[string]FailureKind{
	"The API provider is not able to authenticate you. Check your API key.":                       FailureAuth,
	"Permission was denied. Check your API key and/or credentials.":                               FailureAuth,
	"The API provider's servers are down or overloaded.":                                          FailureOverloaded,
	"The API provider has rate limited you. Try again later or check your quotas.":                FailureRateLimited,
	"The API provider timed out without returning a response. They may be down or overloaded.":    FailureAPI,
	"The API provider has refused the request due to a safety policy about the content.":          FailureExecution,
	"The API provider was unable to fetch one or more images.":                                    FailureExecution,
	"Insufficient credits with the API provider. Please add credits.":                             FailureBudget,
	"OpenRouter or the upstream API provider is down, overloaded or rate limiting your requests.": FailureOverloaded,
}

// aiderClasses classifies litellm's exception classes aider names.
var aiderClasses = map[string]FailureKind{
	"AuthenticationError": FailureAuth, "PermissionDeniedError": FailureAuth,
	"RateLimitError": FailureRateLimited, "RouterRateLimitError": FailureRateLimited,
	"ServiceUnavailableError": FailureOverloaded, "BadGatewayError": FailureOverloaded,
	"InternalServerError": FailureAPI, "APIConnectionError": FailureAPI, "APIError": FailureAPI, "Timeout": FailureAPI,
	"BadRequestError": FailureUsage, "NotFoundError": FailureUsage, "UnsupportedParamsError": FailureUsage,
	"ContextWindowExceededError": FailureExecution, "BudgetExceededError": FailureBudget,
}

func (r *aiderReader) Line(line []byte, cut bool) {
	r.text.Line(line, cut)
	if cut {
		return
	}
	s := strings.TrimSpace(string(line))
	if s == "" {
		return
	}
	switch {
	case strings.HasPrefix(s, "Tokens: "):
		r.tokens(s)
		r.lastError = nil // a model call went through after it
	case strings.HasPrefix(s, "Cost: "):
		r.costLine(s)
	case strings.HasPrefix(s, "Retrying in ") && strings.HasSuffix(s, " seconds..."):
		r.lastError = nil // aider tries again itself
	default:
		if m := aiderLitellmRe.FindStringSubmatch(s); m != nil {
			r.lastError = &aiderError{class: m[1], desc: s}
			return
		}
		if _, ok := aiderDescriptions[s]; ok {
			if r.lastError == nil {
				r.lastError = &aiderError{}
			}
			r.lastError.desc = s
		}
	}
}

func (r *aiderReader) tokens(s string) {
	m := aiderTokensRe.FindStringSubmatch(s)
	if m == nil || r.usageBad != "" {
		return
	}
	var n [4]int64
	for i, v := range m[1:] {
		if v == "" {
			continue
		}
		c, err := aiderCount(v)
		if err != nil {
			r.usageBad = "a Tokens line: " + err.Error()
			return
		}
		n[i] = c
	}
	sent, write, hit, received := n[0], n[1], n[2], n[3]
	// "sent" counts the prompt with the cache tokens it includes (the
	// provider's prompt_tokens, plus cache writes for Anthropic); the rest is
	// the uncached input.
	in := sent - write - hit
	if in < 0 {
		in = 0
	}
	r.usage.InputTokens += in
	r.usage.OutputTokens += received
	r.usage.CacheReadTokens += hit
	r.usage.CacheWriteTokens += write
	r.reports++
	if r.usage.Tokens() > 4*pipeline.MaxStepTokens {
		r.usageBad = "token counts out of bounds"
	}
	// The cost often follows on the same line.
	if i := strings.Index(s, "Cost: "); i >= 0 {
		r.costLine(s[i:])
	}
}

func (r *aiderReader) costLine(s string) {
	m := aiderCostRe.FindStringSubmatch(s)
	if m == nil {
		return
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(m[2], ",", ""), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) || v < 0 {
		r.usageBad = "a Cost line's session figure is not a number"
		return
	}
	r.cost, r.costSeen = v, true
}

// aiderCount reads format_tokens' output: 345, 1.2k, 12k, 12,345, 1.5M.
func aiderCount(v string) (int64, error) {
	mult := 1.0
	switch v[len(v)-1] {
	case 'k', 'K':
		mult, v = 1e3, v[:len(v)-1]
	case 'm', 'M':
		mult, v = 1e6, v[:len(v)-1]
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(v, ",", ""), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || f < 0 || f*mult > pipeline.MaxStepTokens {
		return 0, fmt.Errorf("%q is not a token count", v)
	}
	return int64(math.Round(f * mult)), nil
}

func (r *aiderReader) Finish(answerFile []byte) Final {
	f := r.text.Finish(answerFile)
	switch {
	case r.usageBad != "":
		f.Notes = append(f.Notes, "usage in aider's report ignored: "+r.usageBad)
	case r.reports > 0 || r.costSeen:
		u := r.usage
		u.Steps = 1
		if r.costSeen {
			u.CostMicros, u.Priced = int64(math.Round(r.cost*1e6)), 1
		}
		if err := u.Check(); err != nil {
			f.Notes = append(f.Notes, "usage in aider's report ignored: "+err.Error())
		} else {
			f.Usage, f.UsageSource = &u, UsageAider
		}
	}
	if e := r.lastError; e != nil {
		// The last model call failed and aider did not try again.
		kind, ok := aiderDescriptions[e.desc]
		if !ok {
			kind, ok = aiderClasses[e.class]
		}
		if !ok {
			kind = FailureAPI
		}
		f.Failure = newFailure(kind, "aider: %s", e.desc)
	}
	return f
}
