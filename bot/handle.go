package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// payload is the part of a webhook payload the core reads. It is decoded
// with encoding/json into our own types, so no go-github type reaches the
// handlers.
type payload struct {
	Action       string `json:"action"`
	Installation struct {
		ID int64 `json:"id"`
	} `json:"installation"`
	Repository struct {
		FullName      string `json:"full_name"`
		DefaultBranch string `json:"default_branch"`
		HTMLURL       string `json:"html_url"`
	} `json:"repository"`
	Sender hookUser `json:"sender"`
	Label  *struct {
		Name string `json:"name"`
	} `json:"label"`
	Issue *struct {
		Number      int             `json:"number"`
		Title       string          `json:"title"`
		Body        string          `json:"body"`
		State       string          `json:"state"`
		User        hookUser        `json:"user"`
		Labels      []hookLabel     `json:"labels"`
		PullRequest json.RawMessage `json:"pull_request"`
		CreatedAt   time.Time       `json:"created_at"`
	} `json:"issue"`
	Comment *struct {
		ID        int64     `json:"id"`
		Body      string    `json:"body"`
		User      hookUser  `json:"user"`
		CreatedAt time.Time `json:"created_at"`
	} `json:"comment"`
	PullRequest *struct {
		Number   int         `json:"number"`
		Title    string      `json:"title"`
		State    string      `json:"state"`
		Merged   bool        `json:"merged"`
		MergedBy *hookUser   `json:"merged_by"`
		Labels   []hookLabel `json:"labels"`
		Head     struct {
			Ref string `json:"ref"`
		} `json:"head"`
	} `json:"pull_request"`
	Review *struct {
		ID    int64    `json:"id"`
		State string   `json:"state"`
		Body  string   `json:"body"`
		User  hookUser `json:"user"`
	} `json:"review"`
	WorkflowRun *struct {
		ID           int64  `json:"id"`
		Name         string `json:"name"`
		DisplayTitle string `json:"display_title"`
		Status       string `json:"status"`
		Conclusion   string `json:"conclusion"`
		HTMLURL      string `json:"html_url"`
	} `json:"workflow_run"`
	WorkflowJob *struct {
		RunID      int64  `json:"run_id"`
		Status     string `json:"status"`
		Conclusion string `json:"conclusion"`
	} `json:"workflow_job"`
}

type hookUser struct {
	Login string `json:"login"`
	Type  string `json:"type"`
}

type hookLabel struct {
	Name string `json:"name"`
}

func labelNames(ls []hookLabel) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		out = append(out, l.Name)
	}
	return out
}

// input is what one delivery asks of a session's reconcile.
type input struct {
	delivery string
	events   []pipeline.Event
	// record are events to keep in the hidden event block of the bot's
	// comment, for a rebuild to replay.
	record []pipeline.Event
	start  *startInfo
	result *resultIn
	fail   *pipeline.Event
	// replies are lines of the bot's comment (acknowledgements, status).
	replies []string
	status  bool
	// replyTo is where the comment goes (0: the issue).
	replyTo int
	// commentID is the delivery's comment (a result), left out of a rebuild.
	commentID int64
	// command marks human commands (a reply when there is no session).
	command bool
	// labels are the labels the payload showed, by issue/PR number.
	labels map[int][]string
	sweep  bool
}

type startInfo struct {
	title, body, base, actor, repoURL string
}

type resultIn struct {
	rec    codec.ResultRecord
	author string
	number int
}

var branchRE = regexp.MustCompile(`^bazinga/([0-9]+)-([A-Za-z0-9_-]{1,32})$`)

// parseBranch reads a group branch bazinga/<issue>-<group>.
func parseBranch(ref string) (issue int, group string, ok bool) {
	m := branchRE.FindStringSubmatch(ref)
	if m == nil {
		return 0, "", false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n < 1 {
		return 0, "", false
	}
	return n, m[2], true
}

var titleRE = regexp.MustCompile(`^\[bazinga #([0-9]+)\]`)

// Key serialises deliveries per session: "<owner/repo>#<issue>".
func (b *Bot) Key(d Delivery) string {
	var p payload
	if json.Unmarshal(d.Payload, &p) != nil {
		return ""
	}
	repo := p.Repository.FullName
	if repo == "" {
		repo = d.Repo
	}
	if repo == "" {
		return ""
	}
	n := b.sessionOf(d.Event, &p)
	if n == 0 {
		if d.Event == "workflow_job" && p.WorkflowJob != nil {
			return repo + "#run-" + strconv.FormatInt(p.WorkflowJob.RunID, 10)
		}
		return ""
	}
	return repo + "#" + strconv.Itoa(n)
}

// sessionOf derives the session (issue number) of a delivery without
// calling GitHub; 0 when it cannot.
func (b *Bot) sessionOf(event string, p *payload) int {
	switch event {
	case "issues":
		if p.Issue != nil {
			return p.Issue.Number
		}
	case "issue_comment":
		if p.Issue == nil {
			return 0
		}
		if len(p.Issue.PullRequest) == 0 || string(p.Issue.PullRequest) == "null" {
			return p.Issue.Number
		}
		if p.Comment != nil {
			if rec, ok := codec.ParseResultComment(p.Comment.Body); ok {
				if n, err := strconv.Atoi(strings.SplitN(rec.Step, "/", 2)[0]); err == nil {
					return n
				}
			}
		}
		if m := titleRE.FindStringSubmatch(p.Issue.Title); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
	case "pull_request", "pull_request_review":
		if p.PullRequest != nil {
			if n, _, ok := parseBranch(p.PullRequest.Head.Ref); ok {
				return n
			}
		}
	case "workflow_run":
		if p.WorkflowRun != nil {
			if _, ref, ok := codec.StepInText(p.WorkflowRun.DisplayTitle); ok {
				n, _ := strconv.Atoi(ref.Session)
				return n
			}
		}
	}
	return 0
}

// Process handles one delivery.
func (b *Bot) Process(ctx context.Context, d Delivery) error {
	var p payload
	if err := json.Unmarshal(d.Payload, &p); err != nil {
		return fmt.Errorf("delivery %s: %w: malformed payload: %v", d.ID, ErrIgnored, err)
	}
	switch d.Event {
	case "ping", "installation", "installation_repositories", "installation_target", "github_app_authorization":
		b.log.Info("acknowledged", "delivery", d.ID, "event", d.Event, "action", p.Action)
		return nil
	}
	full := p.Repository.FullName
	if full == "" {
		full = d.Repo
	}
	repo, ok := ghapi.ParseRepo(full)
	if !ok {
		return fmt.Errorf("delivery %s (%s): %w: no repository", d.ID, d.Event, ErrIgnored)
	}
	inst := p.Installation.ID
	if inst == 0 {
		inst = d.Installation
	}
	b.remember(inst, repo)
	if strings.EqualFold(p.Sender.Login, b.o.Login) && d.Event != "workflow_run" && d.Event != "workflow_job" {
		// The bot never reacts to itself (its own comments, labels, PRs).
		return fmt.Errorf("delivery %s: %w: sent by the bot itself", d.ID, ErrIgnored)
	}
	gh, err := b.o.Client(ctx, inst)
	if err != nil {
		return fmt.Errorf("delivery %s: client for installation %d: %w", d.ID, inst, err)
	}
	h := handler{b: b, gh: gh, d: d, p: &p, ref: sessionRef{inst: inst, repo: repo}}
	switch d.Event {
	case "issues":
		return h.issues(ctx)
	case "issue_comment":
		return h.comment(ctx)
	case "pull_request_review":
		return h.review(ctx)
	case "pull_request":
		return h.pullRequest(ctx)
	case "workflow_run", "workflow_job":
		return h.workflow(ctx)
	}
	return fmt.Errorf("delivery %s: %w: event %s", d.ID, ErrIgnored, d.Event)
}

type handler struct {
	b   *Bot
	gh  GitHub
	d   Delivery
	p   *payload
	ref sessionRef
}

func (h *handler) ignored(format string, args ...any) error {
	return fmt.Errorf("delivery %s (%s.%s): %w: %s", h.d.ID, h.d.Event, h.p.Action, ErrIgnored, fmt.Sprintf(format, args...))
}

func (h *handler) session() string { return strconv.Itoa(h.ref.issue) }

// authorised reports whether login may drive sessions: write, maintain or
// admin on the repository. Bots never are.
func (h *handler) authorised(ctx context.Context, u hookUser) (bool, error) {
	if u.Type == "Bot" || strings.HasSuffix(u.Login, "[bot]") {
		return false, nil
	}
	role, err := h.gh.GetPermission(ctx, h.ref.repo, u.Login)
	if errors.Is(err, ghapi.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	switch role {
	case "admin", "maintain", "write":
		return true, nil
	}
	return false, nil
}

func (h *handler) issues(ctx context.Context) error {
	p := h.p
	if p.Issue == nil || p.Label == nil || !strings.EqualFold(p.Label.Name, h.b.o.StartLabel) {
		return h.ignored("not the %s label", h.b.o.StartLabel)
	}
	if len(p.Issue.PullRequest) > 0 && string(p.Issue.PullRequest) != "null" {
		return h.ignored("a pull request")
	}
	h.ref.issue = p.Issue.Number
	labels := map[int][]string{p.Issue.Number: labelNames(p.Issue.Labels)}
	switch p.Action {
	case "labeled":
		ok, err := h.authorised(ctx, p.Sender)
		if err != nil {
			return fmt.Errorf("delivery %s: %w", h.d.ID, err)
		}
		if !ok {
			return h.ignored("%s may not start sessions", p.Sender.Login)
		}
		base := p.Repository.DefaultBranch
		if base == "" {
			base = "main"
		}
		return h.b.reconcile(ctx, h.gh, h.ref, input{delivery: h.d.ID, labels: labels,
			start: &startInfo{title: p.Issue.Title, body: p.Issue.Body, base: base, actor: p.Sender.Login, repoURL: p.Repository.HTMLURL},
			// A label on a paused session resumes it.
			events: []pipeline.Event{pipeline.CommandEvent(h.session(), p.Sender.Login, pipeline.Command{Kind: pipeline.CommandResume})}})
	case "unlabeled":
		ok, err := h.authorised(ctx, p.Sender)
		if err != nil {
			return fmt.Errorf("delivery %s: %w", h.d.ID, err)
		}
		if !ok {
			return h.ignored("%s may not pause sessions", p.Sender.Login)
		}
		ev := pipeline.CommandEvent(h.session(), p.Sender.Login, pipeline.Command{Kind: pipeline.CommandPause,
			Text: "the " + h.b.o.StartLabel + " label was removed by " + p.Sender.Login})
		return h.b.reconcile(ctx, h.gh, h.ref, input{delivery: h.d.ID, labels: labels, events: []pipeline.Event{ev},
			record: []pipeline.Event{ev}})
	}
	return h.ignored("action %s", p.Action)
}

func (h *handler) comment(ctx context.Context) error {
	p := h.p
	if p.Action != "created" || p.Issue == nil || p.Comment == nil {
		return h.ignored("not a new comment")
	}
	author := p.Comment.User
	if strings.EqualFold(author.Login, h.b.o.Login) {
		return h.ignored("the bot's own comment")
	}
	isPR := len(p.Issue.PullRequest) > 0 && string(p.Issue.PullRequest) != "null"
	labels := map[int][]string{p.Issue.Number: labelNames(p.Issue.Labels)}
	if rec, ok := codec.ParseResultComment(p.Comment.Body); ok {
		n, err := strconv.Atoi(strings.SplitN(rec.Step, "/", 2)[0])
		if err != nil {
			return h.ignored("result for step %s of no issue", rec.Step)
		}
		h.ref.issue = n
		return h.b.reconcile(ctx, h.gh, h.ref, input{delivery: h.d.ID, labels: labels,
			result: &resultIn{rec: rec, author: author.Login, number: p.Issue.Number}, commentID: p.Comment.ID})
	}
	cmds := ParseCommands(p.Comment.Body)
	if len(cmds) == 0 {
		return h.ignored("no command")
	}
	if author.Type == "Bot" || strings.HasSuffix(author.Login, "[bot]") {
		return h.ignored("commands from bots are ignored")
	}
	// The session: the issue itself, or the issue a group PR belongs to.
	h.ref.issue = p.Issue.Number
	replyTo := 0
	if isPR {
		pr, err := h.gh.GetPR(ctx, h.ref.repo, p.Issue.Number)
		if err != nil {
			return fmt.Errorf("delivery %s: %w", h.d.ID, err)
		}
		n, _, ok := parseBranch(pr.Head)
		if !ok {
			return h.ignored("a pull request that is not a bazinga group PR")
		}
		h.ref.issue = n
		replyTo = p.Issue.Number
	}
	ok, err := h.authorised(ctx, author)
	if err != nil {
		return fmt.Errorf("delivery %s: %w", h.d.ID, err)
	}
	where := h.ref.issue
	if replyTo != 0 {
		where = replyTo
	}
	if !ok {
		_, err := h.gh.CreateComment(ctx, h.ref.repo, where,
			fmt.Sprintf("@%s only people with write, maintain or admin permission on this repository can run bazinga commands.", author.Login))
		if err != nil {
			return fmt.Errorf("delivery %s: refusal: %w", h.d.ID, err)
		}
		return h.ignored("%s is not authorised", author.Login)
	}
	in := input{delivery: h.d.ID, labels: labels, replyTo: replyTo, command: true}
	for _, c := range cmds {
		if pc, ok := c.PipelineCommand(); ok {
			ev := pipeline.CommandEvent(h.session(), author.Login, pc)
			in.events = append(in.events, ev)
			in.record = append(in.record, ev)
			if c.Name == CmdAnswer {
				in.replies = append(in.replies, ackText(author.Login, c))
			}
			continue
		}
		switch c.Name {
		case CmdStatus:
			in.status = true
		default:
			in.replies = append(in.replies, HelpText())
		}
	}
	if len(in.events) == 0 && !in.status {
		// help (or only unknown commands): no session needed.
		_, err := h.gh.CreateComment(ctx, h.ref.repo, where, strings.Join(in.replies, "\n\n"))
		if err != nil {
			return fmt.Errorf("delivery %s: help: %w", h.d.ID, err)
		}
		return nil
	}
	in.events = append(in.events, pipeline.Tick(h.session()))
	return h.b.reconcile(ctx, h.gh, h.ref, in)
}

func ackText(who string, c ParsedCommand) string {
	switch c.Name {
	case CmdResume:
		return "▶️ `/bazinga resume` from @" + who
	case CmdStop:
		return "⏹️ `/bazinga stop` from @" + who
	case CmdRetry:
		if c.Group != "" {
			return "🔁 `/bazinga retry " + c.Group + "` from @" + who
		}
		return "🔁 `/bazinga retry` from @" + who
	case CmdAnswer:
		return "📨 Answer from @" + who + " received; the pm continues with it."
	}
	return ""
}

func (h *handler) review(ctx context.Context) error {
	p := h.p
	if p.PullRequest == nil || p.Review == nil {
		return h.ignored("no review")
	}
	n, group, ok := parseBranch(p.PullRequest.Head.Ref)
	if !ok {
		return h.ignored("not a group PR")
	}
	var state pipeline.ReviewState
	switch {
	case p.Action == "dismissed" || strings.EqualFold(p.Review.State, "dismissed"):
		state = pipeline.ReviewDismissed
	case p.Action != "submitted":
		return h.ignored("review action %s", p.Action)
	case strings.EqualFold(p.Review.State, "approved"):
		state = pipeline.ReviewApproved
	case strings.EqualFold(p.Review.State, "changes_requested"):
		state = pipeline.ReviewChangesRequested
	default:
		state = pipeline.ReviewCommented
	}
	h.ref.issue = n
	reviewer := p.Review.User
	if state == pipeline.ReviewApproved || state == pipeline.ReviewChangesRequested {
		ok, err := h.authorised(ctx, reviewer)
		if err != nil {
			return fmt.Errorf("delivery %s: %w", h.d.ID, err)
		}
		if !ok {
			return h.ignored("review by %s, who has no write access", reviewer.Login)
		}
	}
	ev := pipeline.Event{Kind: pipeline.EventHumanReview, Session: h.session(), Group: group, Actor: reviewer.Login,
		Review: state, Body: p.Review.Body}
	return h.b.reconcile(ctx, h.gh, h.ref, input{delivery: h.d.ID, events: []pipeline.Event{ev},
		labels: map[int][]string{p.PullRequest.Number: labelNames(p.PullRequest.Labels)}})
}

func (h *handler) pullRequest(ctx context.Context) error {
	p := h.p
	if p.Action != "closed" || p.PullRequest == nil {
		return h.ignored("pull_request action %s", p.Action)
	}
	n, group, ok := parseBranch(p.PullRequest.Head.Ref)
	if !ok {
		return h.ignored("not a group PR")
	}
	h.ref.issue = n
	actor := p.Sender.Login
	if p.PullRequest.MergedBy != nil && p.PullRequest.MergedBy.Login != "" {
		actor = p.PullRequest.MergedBy.Login
	}
	ev := pipeline.Event{Kind: pipeline.EventPRClosed, Session: h.session(), Group: group, Actor: actor, Merged: p.PullRequest.Merged}
	return h.b.reconcile(ctx, h.gh, h.ref, input{delivery: h.d.ID, events: []pipeline.Event{ev}})
}

func (h *handler) workflow(ctx context.Context) error {
	p := h.p
	if p.Action != "completed" {
		return h.ignored("workflow action %s", p.Action)
	}
	var title, conclusion string
	switch {
	case p.WorkflowRun != nil:
		title, conclusion = p.WorkflowRun.DisplayTitle, p.WorkflowRun.Conclusion
	case p.WorkflowJob != nil:
		conclusion = p.WorkflowJob.Conclusion
		if conclusion == "success" || conclusion == "skipped" {
			return h.ignored("job succeeded")
		}
		run, err := h.gh.GetRun(ctx, h.ref.repo, p.WorkflowJob.RunID)
		if err != nil {
			return fmt.Errorf("delivery %s: %w", h.d.ID, err)
		}
		title = run.Title
	default:
		return h.ignored("no run")
	}
	if conclusion == "success" || conclusion == "skipped" {
		return h.ignored("run succeeded")
	}
	step, ref, ok := codec.StepInText(title)
	if !ok {
		return h.ignored("run %q carries no step id", title)
	}
	n, err := strconv.Atoi(ref.Session)
	if err != nil {
		return h.ignored("step %s of no issue", step)
	}
	h.ref.issue = n
	ev := pipeline.StepFailure(ref.Session, step, "the job ended "+conclusion+" without a result")
	return h.b.reconcile(ctx, h.gh, h.ref, input{delivery: h.d.ID, fail: &ev})
}
