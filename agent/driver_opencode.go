package agent

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// opencodeDriver runs opencode (npm opencode-ai; github sst/opencode, now
// anomalyco/opencode) headless: `opencode run` with the prompt on standard
// input (run reads piped input as the message, after any words given).
//
// Output with --format json (packages/opencode/src/cli/cmd/run.ts, emit();
// part shapes in packages/opencode/src/session/message-v2.ts): one event per
// line, {"type","timestamp","sessionID",…} —
//
//   - step_start {"part":{"type":"step-start","messageID",…}}
//   - text {"part":{"type":"text","messageID","text","time":{"start","end"}}},
//     printed once the text part is complete
//   - reasoning {"part":{…}} (with --thinking)
//   - tool_use {"part":{"type":"tool","tool","callID","state":{"status":
//     "completed"|"error","input":{…},"output"|"error",…}}}
//   - step_finish {"part":{"type":"step-finish","reason","cost":<dollars>,
//     "tokens":{"total","input","output","reasoning","cache":{"read",
//     "write"}}}}: one per model call
//   - error {"error":{"name":"APIError"|"ProviderAuthError"|"UnknownError"|
//     "MessageOutputLengthError"|"MessageAbortedError"|
//     "ContextOverflowError"|…,"data":{"message","statusCode",
//     "isRetryable",…}}}
//   - done {"reason":"idle","rejected":[…]} (versions after 1.18)
//
// Each model call is one assistant message with its own messageID. The
// final answer is the text of the last message, after its last tool call:
// what the model said when it had nothing more to run. A second session's
// events, or a second done, came from something else writing to the output
// (FailureConflict).
//
// Permissions (docs: permissions.mdx; config.ts): the role's rules go in
// OPENCODE_PERMISSION, which opencode merges over the permission block of
// every config file it loads, the repository's opencode.json and .opencode/
// included (OPENCODE_CONFIG_CONTENT is merged before .opencode/ directories
// in 1.x and would replace a user's own inline config, so it is left to the
// user). A tool denied outright is taken from the model's tool list; a call
// it makes anyway comes back as the "invalid" tool. Nothing is set to
// "ask": `opencode run` rejects every ask, and a rejection ends the agent's
// loop. What opencode cannot be made to do: an agent's own permission block
// (agent.build.permission in the repository's config) takes precedence over
// the top-level one, and a later "*" rule in a config can re-allow a tool;
// bash can write files whatever edit says. What a review step changes is not
// kept by the harness, whatever the CLI allowed.
type opencodeDriver struct{}

func init() { register(opencodeDriver{}) }

func (opencodeDriver) Name() string      { return "opencode" }
func (opencodeDriver) FinalAnswer() bool { return true }

// UsageOpencode names opencode's step_finish parts as a step's usage source.
const UsageOpencode = "opencode"

// opencodePermissions are the role's rules: edit covers edit, write, patch
// and multiedit; external_directory (paths outside the working copy) and
// doom_loop (the same call three times) default to "ask", which a headless
// run turns into a loop-ending rejection, so they are decided here.
func opencodePermissions(a Access) string {
	switch a {
	case AccessEdit:
		return `{"edit":"allow","bash":"allow","external_directory":"allow","doom_loop":"deny"}`
	case AccessRun:
		return `{"edit":"deny","bash":"allow","external_directory":"allow","doom_loop":"deny"}`
	}
	return `{"edit":"deny","bash":"deny","external_directory":"deny","doom_loop":"deny"}`
}

// opencodeCommand is the subcommand: the first word that is not a flag.
func opencodeCommand(args []string) string {
	for _, a := range args[programEnd(args):] {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

func (opencodeDriver) Check(args []string) []string {
	own := ownArgs(args)
	var problems []string
	if len(args) < 2 || opencodeCommand(args) != "run" {
		problems = append(problems, "opencode needs the run subcommand to work without a terminal (opencode run …)")
	}
	switch format, _ := flagValue(own, "--format"); format {
	case "", "json":
	case "default":
		problems = append(problems, "opencode run --format default prints formatted text: no usage, no errors, no final answer apart from the transcript; leave --format out (bazinga uses json)")
	default:
		problems = append(problems, fmt.Sprintf("opencode run --format %q is not default or json", format))
	}
	if hasFlag(own, "--interactive", "-i", "--mini") {
		problems = append(problems, "opencode run --interactive needs a terminal; leave it out")
	}
	if hasFlag(own, "--attach") {
		problems = append(problems, "opencode run --attach sends the step to a server that bazinga's permissions (OPENCODE_PERMISSION) and working copy do not reach; leave it out")
	}
	return problems
}

func (opencodeDriver) Invocation(args []string, s Invoke) (Invocation, error) {
	own := ownArgs(args)
	inv := Invocation{Env: map[string]string{
		"OPENCODE_PERMISSION":         opencodePermissions(s.Access),
		"OPENCODE_DISABLE_AUTOUPDATE": "true",
	}}
	var extra []string
	if !hasFlag(own, "--format") {
		extra = append(extra, "--format", "json")
	}
	if s.Model != "" && !hasFlag(own, "--model", "-m") {
		if !strings.Contains(s.Model, "/") {
			return inv, fmt.Errorf("opencode takes the model as provider/model (such as anthropic/claude-sonnet-4-5), not %q", s.Model)
		}
		extra = append(extra, "--model", s.Model)
	}
	at := programEnd(args)
	if at < len(args) && args[at] == "run" {
		at++
	}
	inv.Args = insertAt(args, at, extra...)
	return inv, nil
}

func (opencodeDriver) NewReader() OutputReader { return &opencodeReader{} }

// opencodeReader keeps the text of the current assistant message, the usage
// summed over model calls, the errors and the refused tools.
type opencodeReader struct {
	session   string
	foreign   int
	done      int
	events    int
	msg       string
	text      []string
	textBytes int
	textCut   bool
	usage     pipeline.Usage
	cost      float64
	steps     int
	usageBad  string
	errors    []opencodeError
	denied    []string
	cutLines  int
}

type opencodeError struct {
	Name string `json:"name"`
	Data struct {
		Message     string `json:"message"`
		StatusCode  int    `json:"statusCode"`
		IsRetryable bool   `json:"isRetryable"`
		ProviderID  string `json:"providerID"`
	} `json:"data"`
}

var opencodeTypeRe = regexp.MustCompile(`^\{\s*"type"\s*:\s*"([a-z_]+)"`)

type opencodePart struct {
	Type      string `json:"type"`
	MessageID string `json:"messageID"`
	Text      string `json:"text"`
	Tool      string `json:"tool"`
	State     struct {
		Status string                     `json:"status"`
		Input  map[string]json.RawMessage `json:"input"`
		Error  string                     `json:"error"`
	} `json:"state"`
	Cost   json.RawMessage `json:"cost"`
	Tokens json.RawMessage `json:"tokens"`
}

func (r *opencodeReader) Line(line []byte, cut bool) {
	t := trimSpace(line)
	if len(t) == 0 || t[0] != '{' {
		return
	}
	if cut {
		r.cutLines++
		if m := opencodeTypeRe.FindSubmatch(t); m != nil {
			switch string(m[1]) {
			case "text":
				r.textCut = true
			case "tool_use":
				r.text, r.textBytes, r.textCut = nil, 0, false
			}
		}
		return
	}
	var ev struct {
		Type      string          `json:"type"`
		SessionID string          `json:"sessionID"`
		Part      json.RawMessage `json:"part"`
		Error     json.RawMessage `json:"error"`
		Rejected  []string        `json:"rejected"`
	}
	if json.Unmarshal(t, &ev) != nil || ev.Type == "" {
		return
	}
	switch ev.Type {
	case "step_start", "step_finish", "text", "reasoning", "tool_use", "error", "done":
	default:
		return
	}
	r.events++
	if r.session == "" {
		r.session = ev.SessionID
	} else if ev.SessionID != r.session {
		r.foreign++
		return
	}
	switch ev.Type {
	case "error":
		var e opencodeError
		if json.Unmarshal(ev.Error, &e) != nil {
			e.Name = "UnknownError"
			e.Data.Message = capRunes(string(ev.Error), 200)
		}
		r.errors = append(r.errors, e)
		return
	case "done":
		r.done++
		for _, p := range ev.Rejected {
			r.denied = append(r.denied, "permission("+capRunes(p, 60)+")")
		}
		return
	}
	var p opencodePart
	if json.Unmarshal(ev.Part, &p) != nil {
		return
	}
	if p.MessageID != "" && p.MessageID != r.msg {
		// A new assistant message: a new model call.
		r.msg = p.MessageID
		r.text, r.textBytes, r.textCut = nil, 0, false
	}
	switch ev.Type {
	case "text":
		if r.textBytes+len(p.Text) > MaxLineBytes {
			r.textCut = true
			return
		}
		r.text = append(r.text, p.Text)
		r.textBytes += len(p.Text)
	case "tool_use":
		// Text before a tool call is narration, not the answer.
		r.text, r.textBytes, r.textCut = nil, 0, false
		if d, ok := opencodeDenial(p); ok {
			r.denied = append(r.denied, d)
		}
	case "step_finish":
		r.addStep(p)
	}
}

// opencodeDenial names a tool call opencode refused: one the permissions
// took from the model's tool list (it comes back as the "invalid" tool), or
// one a deny rule or the headless auto-rejection stopped.
func opencodeDenial(p opencodePart) (string, bool) {
	in := p.State.Input
	if p.Tool == "invalid" {
		msg := jsonString(in["error"])
		if strings.Contains(msg, "unavailable tool") {
			return capRunes(jsonString(in["tool"]), 60), true
		}
		return "", false
	}
	if p.State.Status != "error" {
		return "", false
	}
	if strings.HasPrefix(p.State.Error, "The user has specified a rule which prevents you") ||
		strings.HasPrefix(p.State.Error, "The user rejected permission") ||
		strings.Contains(p.State.Error, "PermissionDeniedError") {
		for _, k := range []string{"command", "filePath", "path", "pattern", "url"} {
			if v := jsonString(in[k]); v != "" {
				return fmt.Sprintf("%s(%s)", p.Tool, capRunes(strings.Join(strings.Fields(v), " "), 80)), true
			}
		}
		return p.Tool, true
	}
	return "", false
}

// addStep adds one model call's tokens and cost. tokens.input leaves the
// cached tokens out (cache.read and cache.write); output leaves the
// reasoning out, which is billed as output.
func (r *opencodeReader) addStep(p opencodePart) {
	r.steps++
	if r.usageBad != "" {
		return
	}
	var tok struct {
		Input     json.RawMessage `json:"input"`
		Output    json.RawMessage `json:"output"`
		Reasoning json.RawMessage `json:"reasoning"`
		Cache     struct {
			Read  json.RawMessage `json:"read"`
			Write json.RawMessage `json:"write"`
		} `json:"cache"`
	}
	if err := json.Unmarshal(p.Tokens, &tok); err != nil {
		r.usageBad = "tokens is not an object"
		return
	}
	var step pipeline.Usage
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  *int64
	}{{"input", tok.Input, &step.InputTokens}, {"output", tok.Output, &step.OutputTokens},
		{"reasoning", tok.Reasoning, &step.OutputTokens}, {"cache.read", tok.Cache.Read, &step.CacheReadTokens},
		{"cache.write", tok.Cache.Write, &step.CacheWriteTokens}} {
		if len(f.raw) == 0 || string(f.raw) == "null" {
			continue
		}
		v, err := jsonNumber(f.raw)
		if err != nil || v < 0 || v != math.Trunc(v) || v > pipeline.MaxStepTokens {
			r.usageBad = fmt.Sprintf("tokens.%s is not a whole number from 0 to %d", f.name, int64(pipeline.MaxStepTokens))
			return
		}
		*f.dst += int64(v)
	}
	if len(p.Cost) > 0 && string(p.Cost) != "null" {
		c, err := jsonNumber(p.Cost)
		if err != nil || c < 0 {
			r.usageBad = "cost is not a number of dollars"
			return
		}
		r.cost += c
	}
	r.usage.InputTokens += step.InputTokens
	r.usage.OutputTokens += step.OutputTokens
	r.usage.CacheReadTokens += step.CacheReadTokens
	r.usage.CacheWriteTokens += step.CacheWriteTokens
}

func (r *opencodeReader) Finish([]byte) Final {
	var f Final
	if r.cutLines > 0 {
		f.Notes = append(f.Notes, fmt.Sprintf("%d output line(s) longer than %d bytes were not read", r.cutLines, MaxLineBytes))
	}
	switch {
	case r.foreign > 0:
		f.Failure = newFailure(FailureConflict, "opencode's output holds %d event(s) of another session than %s; something else wrote to it, so no answer is trusted", r.foreign, capRunes(r.session, 60))
		return f
	case r.done > 1:
		f.Failure = newFailure(FailureConflict, "opencode's output holds %d done events; only one comes from opencode, so no answer is trusted", r.done)
		return f
	}
	f.Denied = r.denied
	if r.steps > 0 {
		if u, err := r.finalUsage(); err == nil {
			f.Usage, f.UsageSource = u, UsageOpencode
		} else {
			f.Notes = append(f.Notes, "usage in opencode's step_finish ignored: "+err.Error())
		}
	}
	if n := len(r.errors); n > 0 {
		e := r.errors[n-1]
		msg := firstNonEmpty(e.Data.Message, e.Name, "the run failed")
		f.Failure = newFailure(opencodeFailureKind(e), "opencode: %s%s", opencodeErrorName(e), msg)
		return f
	}
	switch {
	case r.textCut:
		f.Failure = newFailure(FailureOutputCut, "opencode's final answer was on a line over %d bytes, not read whole", MaxLineBytes)
	case r.events == 0:
		f.Failure = newFailure(FailureNoAnswer, "opencode printed no events (is it run with --format json?)")
	case len(r.text) == 0:
		f.Failure = newFailure(FailureNoAnswer, "opencode's last message has no text after its last tool call")
	default:
		f.Answer, f.HasAnswer = strings.Join(r.text, "\n"), true
	}
	return f
}

func (r *opencodeReader) finalUsage() (*pipeline.Usage, error) {
	if r.usageBad != "" {
		return nil, fmt.Errorf("%s", r.usageBad)
	}
	u := r.usage
	u.Steps = 1
	if r.cost > 0 {
		if r.cost*1e6 > pipeline.MaxStepCostMicros {
			return nil, fmt.Errorf("cost %v is outside 0 to %d", r.cost, pipeline.MaxStepCostMicros/1_000_000)
		}
		u.CostMicros, u.Priced = int64(math.Round(r.cost*1e6)), 1
	}
	if err := u.Check(); err != nil {
		return nil, err
	}
	return &u, nil
}

func opencodeErrorName(e opencodeError) string {
	switch e.Name {
	case "", "UnknownError", "APIError":
		if e.Data.StatusCode != 0 {
			return fmt.Sprintf("HTTP %d: ", e.Data.StatusCode)
		}
		return ""
	}
	return e.Name + ": "
}

// opencodeFailureKind classifies opencode's error (MessageV2's named
// errors): the provider's HTTP status when it gave one.
func opencodeFailureKind(e opencodeError) FailureKind {
	low := strings.ToLower(e.Data.Message)
	switch e.Name {
	case "ProviderAuthError":
		return FailureAuth
	case "MessageOutputLengthError", "MessageAbortedError", "ContextOverflowError":
		return FailureExecution
	case "StructuredOutputError":
		return FailureNoAnswer
	}
	if e.Data.StatusCode != 0 {
		if e.Data.StatusCode == 529 || strings.Contains(low, "overloaded") {
			return FailureOverloaded
		}
		return httpFailure(e.Data.StatusCode)
	}
	switch {
	case strings.Contains(low, "overloaded"):
		return FailureOverloaded
	case strings.Contains(low, "rate limit") || strings.Contains(low, "too many requests"):
		return FailureRateLimited
	case strings.Contains(low, "api key") || strings.Contains(low, "unauthorized") || strings.Contains(low, "authentication"):
		return FailureAuth
	case strings.Contains(low, "modelnotfound") || strings.Contains(low, "model not found") || strings.Contains(low, "providernotfound"):
		return FailureUsage
	case e.Name == "APIError" && e.Data.IsRetryable:
		return FailureAPI
	}
	return FailureExecution
}
