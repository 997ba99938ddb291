package bot

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// Translating a delivery is pure: from the payload alone it decides which
// session the delivery is about, which engine events and replies it carries,
// and what must be checked against GitHub before any of it counts (who must
// be authorised, which PR or run names the session). Process then resolves
// and authorises, and drive carries it out.

// payload is the part of a webhook payload bazinga reads, decoded once per
// delivery into our own types.
type payload struct {
	Action       string `json:"action"`
	Installation struct {
		ID int64 `json:"id"`
	} `json:"installation"`
	Repository struct {
		ID            int64  `json:"id"`
		FullName      string `json:"full_name"`
		DefaultBranch string `json:"default_branch"`
		HTMLURL       string `json:"html_url"`
	} `json:"repository"`
	Sender      hookUser     `json:"sender"`
	Label       *hookLabel   `json:"label"`
	Issue       *hookIssue   `json:"issue"`
	Comment     *hookComment `json:"comment"`
	PullRequest *hookPR      `json:"pull_request"`
	Review      *hookReview  `json:"review"`
	WorkflowRun *hookRun     `json:"workflow_run"`
	WorkflowJob *struct {
		RunID      int64  `json:"run_id"`
		Status     string `json:"status"`
		Conclusion string `json:"conclusion"`
	} `json:"workflow_job"`
	// check_run, check_suite and status deliveries (required checks).
	CheckRun   *hookCheckRun   `json:"check_run"`
	CheckSuite *hookCheckSuite `json:"check_suite"`
	State      string          `json:"state"`
	Branches   []struct {
		Name string `json:"name"`
	} `json:"branches"`
	// After is a pull request synchronize's new head.
	After string `json:"after"`
	// Changes is what an edit changed (issues edited).
	Changes *struct {
		Title *struct{} `json:"title"`
		Body  *struct{} `json:"body"`
		// Base is a pull request's former base (edited).
		Base *struct {
			Ref struct {
				From string `json:"from"`
			} `json:"ref"`
		} `json:"base"`
		// NewIssue and NewRepository: where a transferred issue went.
		NewIssue *struct {
			Number int `json:"number"`
		} `json:"new_issue"`
		NewRepository *struct {
			ID       int64  `json:"id"`
			FullName string `json:"full_name"`
		} `json:"new_repository"`
	} `json:"changes"`
}

type hookIssue struct {
	Number      int             `json:"number"`
	Title       string          `json:"title"`
	Body        string          `json:"body"`
	State       string          `json:"state"`
	User        hookUser        `json:"user"`
	Labels      []hookLabel     `json:"labels"`
	PullRequest json.RawMessage `json:"pull_request"`
	CreatedAt   time.Time       `json:"created_at"`
}

type hookComment struct {
	ID        int64     `json:"id"`
	Body      string    `json:"body"`
	User      hookUser  `json:"user"`
	CreatedAt time.Time `json:"created_at"`
	// Association is GitHub's author_association (refusal.go).
	Association string `json:"author_association"`
}

type hookPR struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	State  string `json:"state"`
	Merged bool   `json:"merged"`
	// MergeCommitSHA is the commit a merge made (a squash or rebase leaves
	// the branch out of the base).
	MergeCommitSHA string      `json:"merge_commit_sha"`
	MergedBy       *hookUser   `json:"merged_by"`
	Labels         []hookLabel `json:"labels"`
	Head           struct {
		Ref  string    `json:"ref"`
		SHA  string    `json:"sha"`
		Repo *hookRepo `json:"repo"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
}

type hookRepo struct {
	FullName string `json:"full_name"`
}

type hookReview struct {
	ID    int64    `json:"id"`
	State string   `json:"state"`
	Body  string   `json:"body"`
	User  hookUser `json:"user"`
	// CommitID is the head the review was submitted on.
	CommitID string `json:"commit_id"`
}

type hookRun struct {
	ID           int64  `json:"id"`
	Name         string `json:"name"`
	DisplayTitle string `json:"display_title"`
	Path         string `json:"path"`
	HeadBranch   string `json:"head_branch"`
	Event        string `json:"event"`
	Status       string `json:"status"`
	Conclusion   string `json:"conclusion"`
	HTMLURL      string `json:"html_url"`
	// Actor is who started the run: the dispatcher of a workflow_dispatch.
	Actor hookUser `json:"actor"`
}

type hookUser struct {
	Login string `json:"login"`
	Type  string `json:"type"`
}

// isBot: bots never drive sessions, and never count as reviewers.
func (u hookUser) isBot() bool { return u.Type == "Bot" || strings.HasSuffix(u.Login, "[bot]") }

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

// ParseDelivery decodes a delivery's payload once and fills the routing
// fields (action, installation, repository) from it. A delivery that went
// through ParseDelivery is not decoded again by Key or Process.
func ParseDelivery(d Delivery) (Delivery, error) {
	var p payload
	if err := json.Unmarshal(d.Payload, &p); err != nil {
		return d, fmt.Errorf("delivery %s: malformed payload: %w", d.ID, err)
	}
	d.parsed = &p
	if d.Action == "" {
		d.Action = p.Action
	}
	if d.Installation == 0 {
		d.Installation = p.Installation.ID
	}
	if p.Repository.FullName != "" {
		d.Repo = p.Repository.FullName
	}
	return d, nil
}

// payloadOf returns the delivery's decoded payload, decoding it if
// ParseDelivery did not.
func payloadOf(d Delivery) (*payload, error) {
	if d.parsed != nil {
		return d.parsed, nil
	}
	pd, err := ParseDelivery(d)
	if err != nil {
		return nil, err
	}
	return pd.parsed, nil
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
	// more are further results applied in the same reconcile (results a
	// catch-up found in the log): the engine takes them all before it
	// looks for timeouts, so a result that waited in the log while the bot
	// could not read it does not time its step out.
	more []resultIn
	fail *pipeline.Event
	// failAuthor wrote the failure comment fail came from ("" when a run's
	// conclusion said it).
	failAuthor string
	// run is the run whose conclusion fail came from.
	run *runRef
	// pr is the pull request the events are about: they count only if it is
	// the group's recorded PR.
	pr *prRef
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
	// written is when the commands' comment was written: approve and resume
	// bind to the checkpoint that waited then (issue 13).
	written time.Time
	// edited is who edited the issue's title or body: the session keeps
	// its requirements, and says so (issue 28).
	edited string
	// transferred: the issue moved to another repository, by transferredBy.
	transferred   *ghapi.IssueMove
	transferredBy string
	// cmdComment is the comment the commands came from: applied once
	// (codec.CommandMark). through is how far a catch-up read them.
	cmdComment, through int64
}

// prRef is a pull request an event came from, and the group its head
// branch names.
type prRef struct {
	number int
	group  string
}

// runRef is a workflow run a failure came from.
type runRef struct {
	path, event, actor string
}

type startInfo struct {
	title, body, base, repoURL string
}

type resultIn struct {
	rec    codec.ResultRecord
	author string
	number int
}

// intent is a translated delivery: the session's input, and what Process
// must resolve and check on GitHub before it counts.
type intent struct {
	in input
	// issue is the session; 0 when viaPR or viaRun must name it.
	issue int
	// viaPR: a command on a pull request; the session is the issue of that
	// group PR (its head branch), read from GitHub.
	viaPR int
	// viaRun: a failed job; its run's title names the step.
	viaRun int64
	// conclusion is the failed job's conclusion.
	conclusion string
	// actor must have write access for the intent to count (nil: nobody).
	actor *hookUser
	// refuse: an unauthorised actor is told so (commands), once.
	refuse bool
	// help is a reply that needs no session (help, unknown commands).
	help string
	// label is the start label's change an issues event reports: it counts
	// only while the issue still shows it (a later toggle supersedes it).
	label *labelChange
}

type labelChange struct {
	name  string
	added bool
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

// issueOfStep is the issue of a GitHub session's step id.
func issueOfStep(ref codec.StepRef) int {
	n, err := strconv.Atoi(ref.Session)
	if err != nil || n < 1 {
		return 0
	}
	return n
}

// Key serialises deliveries per session: "<owner/repo>#<issue>". It reads
// only the payload, never GitHub.
func (b *Bot) Key(d Delivery) string {
	p, err := payloadOf(d)
	if err != nil {
		return ""
	}
	repo := p.Repository.FullName
	if repo == "" {
		repo = d.Repo
	}
	if repo == "" {
		return ""
	}
	n := sessionOf(d.Event, p)
	if n == 0 {
		if d.Event == "workflow_job" && p.WorkflowJob != nil {
			return repo + "#run-" + strconv.FormatInt(p.WorkflowJob.RunID, 10)
		}
		return ""
	}
	return repo + "#" + strconv.Itoa(n)
}

// sessionOf derives the session (issue number) of a delivery from its
// payload; 0 when it cannot.
func sessionOf(event string, p *payload) int {
	switch event {
	case "issues":
		if p.Issue != nil {
			return p.Issue.Number
		}
	case "issue_comment":
		if p.Issue == nil {
			return 0
		}
		if !isPR(p.Issue.PullRequest) {
			return p.Issue.Number
		}
		if p.Comment != nil {
			if rec, ok := codec.ParseResultComment(p.Comment.Body); ok {
				if ref, ok := codec.ParseStepID(rec.Step); ok {
					return issueOfStep(ref)
				}
			}
			if rec, ok := codec.ParseFailureComment(p.Comment.Body); ok {
				if ref, ok := codec.ParseStepID(rec.Step); ok {
					return issueOfStep(ref)
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
	case "check_run", "check_suite", "status":
		return checksSession(event, p)
	case "workflow_run":
		if p.WorkflowRun != nil {
			if _, ref, ok := codec.StepInText(p.WorkflowRun.DisplayTitle); ok {
				return issueOfStep(ref)
			}
			// A CI run on a group branch (the Action-only orchestrator runs
			// on the CI workflows' workflow_run: issue 22).
			if n, _, ok := parseBranch(p.WorkflowRun.HeadBranch); ok {
				return n
			}
		}
	}
	return 0
}

func isPR(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// translator holds what translation needs to know of the bot.
type translator struct {
	login      string
	startLabel string
}

// ignored is a delivery bazinga does not act on.
func ignored(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrIgnored, fmt.Sprintf(format, args...))
}

// translate turns one delivery into an intent, or an error wrapping
// ErrIgnored when the delivery needs no work.
func (t translator) translate(d Delivery, p *payload) (intent, error) {
	if strings.EqualFold(p.Sender.Login, t.login) && d.Event != "workflow_run" && d.Event != "workflow_job" && !stepReport(d.Event, p) && !selfEventCounts(d.Event) {
		// The bot never reacts to itself (its own comments, labels, PRs).
		return intent{}, ignored("sent by the bot itself")
	}
	var (
		it  intent
		err error
	)
	switch d.Event {
	case "issues":
		it, err = t.issues(p)
	case "issue_comment":
		it, err = t.comment(p)
	case "pull_request_review":
		it, err = t.review(p)
	case "pull_request":
		it, err = t.pullRequest(p)
	case "workflow_run", "workflow_job":
		it, err = t.workflow(p)
	case "check_run", "check_suite", "status":
		it, err = t.checks(d.Event, p)
	default:
		return intent{}, ignored("event %s", d.Event)
	}
	it.in.delivery = d.ID
	return it, err
}

func (t translator) issues(p *payload) (intent, error) {
	if p.Action == "edited" && p.Issue != nil && !isPR(p.Issue.PullRequest) {
		if p.Changes == nil || (p.Changes.Title == nil && p.Changes.Body == nil) {
			return intent{}, ignored("an issue edit that changed neither title nor body")
		}
		if p.Sender.isBot() {
			return intent{}, ignored("an issue edit by the bot %s", p.Sender.Login)
		}
		return intent{issue: p.Issue.Number, in: input{edited: p.Sender.Login}}, nil
	}
	if p.Action == "transferred" && p.Issue != nil && !isPR(p.Issue.PullRequest) {
		to := ghapi.IssueMove{}
		if p.Changes != nil && p.Changes.NewIssue != nil {
			to.Number = p.Changes.NewIssue.Number
		}
		if p.Changes != nil && p.Changes.NewRepository != nil {
			if r, ok := ghapi.ParseRepo(p.Changes.NewRepository.FullName); ok {
				to.Repo = r
			}
			to.Repo.ID = p.Changes.NewRepository.ID
		}
		return intent{issue: p.Issue.Number, in: input{transferred: &to, transferredBy: p.Sender.Login}}, nil
	}
	if p.Issue == nil || p.Label == nil || !strings.EqualFold(p.Label.Name, t.startLabel) {
		return intent{}, ignored("not the %s label", t.startLabel)
	}
	if isPR(p.Issue.PullRequest) {
		return intent{}, ignored("a pull request")
	}
	n := p.Issue.Number
	session := strconv.Itoa(n)
	labels := map[int][]string{n: labelNames(p.Issue.Labels)}
	sender := p.Sender
	switch p.Action {
	case "labeled":
		base := p.Repository.DefaultBranch
		if base == "" {
			base = "main"
		}
		return intent{issue: n, actor: &sender, label: &labelChange{name: p.Label.Name, added: true}, in: input{labels: labels,
			start: &startInfo{title: p.Issue.Title, body: p.Issue.Body, base: base, repoURL: p.Repository.HTMLURL},
			// A label on a paused session resumes it.
			events: []pipeline.Event{pipeline.CommandEvent(session, sender.Login, pipeline.Command{Kind: pipeline.CommandResume})}}}, nil
	case "unlabeled":
		ev := pipeline.CommandEvent(session, sender.Login, pipeline.Command{Kind: pipeline.CommandPause,
			Text: "the " + t.startLabel + " label was removed by " + sender.Login})
		return intent{issue: n, actor: &sender, label: &labelChange{name: p.Label.Name, added: false},
			in: input{labels: labels, events: []pipeline.Event{ev}, record: []pipeline.Event{ev}}}, nil
	}
	return intent{}, ignored("action %s", p.Action)
}

// stepReport: a new result or failure comment. The bot never posts one; a
// privileged step job acting as the App (the token exchange) does, with
// the bot's login, and it must be applied like a job's.
func stepReport(event string, p *payload) bool {
	if event != "issue_comment" || p.Action != "created" || p.Comment == nil {
		return false
	}
	if _, ok := codec.ParseResultComment(p.Comment.Body); ok {
		return true
	}
	_, ok := codec.ParseFailureComment(p.Comment.Body)
	return ok
}

func (t translator) comment(p *payload) (intent, error) {
	if p.Action != "created" || p.Issue == nil || p.Comment == nil {
		return intent{}, ignored("not a new comment")
	}
	author := p.Comment.User
	if strings.EqualFold(author.Login, t.login) && !stepReport("issue_comment", p) {
		return intent{}, ignored("the bot's own comment")
	}
	labels := map[int][]string{p.Issue.Number: labelNames(p.Issue.Labels)}
	if p.Issue.Labels == nil {
		labels = nil // a catch-up's comment (commands.go): the labels are read
	}
	if rec, ok := codec.ParseResultComment(p.Comment.Body); ok {
		ref, _ := codec.ParseStepID(rec.Step)
		n := issueOfStep(ref)
		if n == 0 {
			return intent{}, ignored("result for step %s of no issue", rec.Step)
		}
		return intent{issue: n, in: input{labels: labels, commentID: p.Comment.ID,
			result: &resultIn{rec: rec, author: author.Login, number: p.Issue.Number}}}, nil
	}
	if rec, ok := codec.ParseFailureComment(p.Comment.Body); ok {
		ref, _ := codec.ParseStepID(rec.Step)
		n := issueOfStep(ref)
		if n == 0 {
			return intent{}, ignored("failure of step %s of no issue", rec.Step)
		}
		ev := rec.Event()
		return intent{issue: n, in: input{labels: labels, fail: &ev, failAuthor: author.Login}}, nil
	}
	cmds := ParseCommands(p.Comment.Body)
	if len(cmds) == 0 {
		return intent{}, ignored("no command")
	}
	if author.isBot() {
		return intent{}, ignored("commands from bots are ignored")
	}
	it := intent{issue: p.Issue.Number, actor: &author, refuse: mayBeRefused(p.Comment.Association),
		in: input{labels: labels, command: true, written: p.Comment.CreatedAt, cmdComment: p.Comment.ID}}
	if isPR(p.Issue.PullRequest) {
		// The session is the issue the group PR belongs to.
		it.issue, it.viaPR, it.in.replyTo = 0, p.Issue.Number, p.Issue.Number
	}
	var helps []string
	for _, c := range cmds {
		if msg := pipeline.AnswerTooLong(strings.TrimSpace(c.Text)); c.Name == CmdAnswer && msg != "" {
			// Issue 27: refused at the door, so it enters neither the
			// session nor the event record (a comment) nor the outbox.
			helps = append(helps, "ℹ️ "+msg)
			it.in.replies = append(it.in.replies, "ℹ️ "+msg)
			continue
		}
		if pc, ok := c.PipelineCommand(); ok {
			// The session id is filled in once the session is known.
			ev := pipeline.CommandEvent("", author.Login, pc)
			it.in.events = append(it.in.events, ev)
			it.in.record = append(it.in.record, ev)
			if c.Name == CmdAnswer {
				it.in.replies = append(it.in.replies, ackText(author.Login, c))
			}
			continue
		}
		switch c.Name {
		case CmdStatus:
			it.in.status = true
		default:
			helps = append(helps, HelpText())
			it.in.replies = append(it.in.replies, HelpText())
		}
	}
	if len(it.in.events) == 0 && !it.in.status {
		// help (or only unknown commands): no session needed.
		it.help = strings.Join(helps, "\n\n")
		return it, nil
	}
	it.in.events = append(it.in.events, pipeline.Tick(""))
	return it, nil
}

func ackText(who string, c ParsedCommand) string {
	word := "`" + commandPrefix + " " + c.Name.String()
	switch c.Name {
	case CmdResume:
		return "▶️ " + word + "` from @" + who
	case CmdStop:
		return "⏹️ " + word + "` from @" + who
	case CmdRetry:
		if c.Group != "" {
			return "🔁 " + word + " " + c.Group + "` from @" + who
		}
		return "🔁 " + word + "` from @" + who
	case CmdAnswer:
		return "📨 Answer from @" + who + " received; the pm continues with it."
	}
	return ""
}

func (t translator) review(p *payload) (intent, error) {
	if p.PullRequest == nil || p.Review == nil {
		return intent{}, ignored("no review")
	}
	n, group, err := groupPR(p)
	if err != nil {
		return intent{}, err
	}
	var state pipeline.ReviewState
	switch {
	case p.Action == "dismissed" || strings.EqualFold(p.Review.State, "dismissed"):
		state = pipeline.ReviewDismissed
	case p.Action != "submitted":
		return intent{}, ignored("review action %s", p.Action)
	case strings.EqualFold(p.Review.State, "approved"):
		state = pipeline.ReviewApproved
	case strings.EqualFold(p.Review.State, "changes_requested"):
		state = pipeline.ReviewChangesRequested
	default:
		state = pipeline.ReviewCommented
	}
	reviewer := p.Review.User
	it := intent{issue: n, in: input{pr: &prRef{number: p.PullRequest.Number, group: group},
		events: []pipeline.Event{{Kind: pipeline.EventHumanReview, Session: strconv.Itoa(n), Group: group, Actor: reviewer.Login,
			Review: state, Body: pipeline.BoundReviewBody(p.Review.Body), Commit: p.Review.CommitID}},
		labels: map[int][]string{p.PullRequest.Number: labelNames(p.PullRequest.Labels)}}}
	if state == pipeline.ReviewApproved || state == pipeline.ReviewChangesRequested {
		// Only a writer's verdict counts; a bot's never does.
		if reviewer.isBot() {
			return intent{}, ignored("review by the bot %s", reviewer.Login)
		}
		it.actor = &reviewer
	}
	return it, nil
}

func (t translator) pullRequest(p *payload) (intent, error) {
	if p.Action == "synchronize" && p.PullRequest != nil {
		return t.synchronize(p)
	}
	if p.Action == "edited" && p.PullRequest != nil {
		// A new base: GitHub retargets the open PRs of a renamed branch.
		// Whether the old one was renamed (it is gone) or a person moved
		// one PR is for the bot to read (baseRenames).
		if p.Changes == nil || p.Changes.Base == nil || p.Changes.Base.Ref.From == "" || p.PullRequest.Base.Ref == "" {
			return intent{}, ignored("a pull request edit that kept its base")
		}
		n, group, err := groupPR(p)
		if err != nil {
			return intent{}, err
		}
		ev := pipeline.BaseRenamed(strconv.Itoa(n), p.Changes.Base.Ref.From, p.PullRequest.Base.Ref, p.Sender.Login)
		return intent{issue: n, in: input{events: []pipeline.Event{ev}, pr: &prRef{number: p.PullRequest.Number, group: group}}}, nil
	}
	if p.Action == "reopened" && p.PullRequest != nil {
		n, group, err := groupPR(p)
		if err != nil {
			return intent{}, err
		}
		ev := pipeline.PRReopened(strconv.Itoa(n), group, p.Sender.Login)
		return intent{issue: n, in: input{events: []pipeline.Event{ev}, record: []pipeline.Event{ev}, pr: &prRef{number: p.PullRequest.Number, group: group}}}, nil
	}
	if p.Action != "closed" || p.PullRequest == nil {
		return intent{}, ignored("pull_request action %s", p.Action)
	}
	n, group, err := groupPR(p)
	if err != nil {
		return intent{}, err
	}
	actor := p.Sender.Login
	if p.PullRequest.MergedBy != nil && p.PullRequest.MergedBy.Login != "" {
		actor = p.PullRequest.MergedBy.Login
	}
	ev := pipeline.Event{Kind: pipeline.EventPRClosed, Session: strconv.Itoa(n), Group: group, Actor: actor, Merged: p.PullRequest.Merged}
	if ev.Merged {
		ev.Commit = p.PullRequest.MergeCommitSHA
	} else {
		ev.Commit = p.PullRequest.Head.SHA // where the branch was, should it be gone
	}
	return intent{issue: n, in: input{events: []pipeline.Event{ev}, pr: &prRef{number: p.PullRequest.Number, group: group}}}, nil
}

// synchronize is a push to a group PR's branch (issue 28): someone other
// than bazinga moved it, and the engine must know before it merges what
// was reviewed. bazinga's own pushes are its step jobs', acting as a bot
// (github-actions[bot], the App); their results name the heads they left.
// Whoever pushed to the repository's own branch has write access: no
// authorisation is needed.
func (t translator) synchronize(p *payload) (intent, error) {
	n, group, err := groupPR(p)
	if err != nil {
		return intent{}, err
	}
	if p.Sender.isBot() {
		return intent{}, ignored("a push by the bot %s", p.Sender.Login)
	}
	head := p.After
	if head == "" {
		head = p.PullRequest.Head.SHA
	}
	if head == "" {
		return intent{}, ignored("a synchronize of PR #%d without a head", p.PullRequest.Number)
	}
	ev := pipeline.Pushed(strconv.Itoa(n), group, head, p.Sender.Login)
	return intent{issue: n, in: input{events: []pipeline.Event{ev}, pr: &prRef{number: p.PullRequest.Number, group: group}}}, nil
}

// groupPR reads the session and group of a pull request event: its head
// branch must be a group branch of this repository. A fork may name its
// branch bazinga/1-A; its events are not the session's.
func groupPR(p *payload) (int, string, error) {
	n, group, ok := parseBranch(p.PullRequest.Head.Ref)
	if !ok {
		return 0, "", ignored("not a group PR")
	}
	if head := p.PullRequest.Head.Repo; head == nil || !strings.EqualFold(head.FullName, p.Repository.FullName) {
		return 0, "", ignored("PR #%d comes from another repository", p.PullRequest.Number)
	}
	return n, group, nil
}

func (t translator) workflow(p *payload) (intent, error) {
	if p.Action != "completed" {
		return intent{}, ignored("workflow action %s", p.Action)
	}
	switch {
	case p.WorkflowRun != nil:
		it, err := failedStep(p.WorkflowRun.DisplayTitle, p.WorkflowRun.Conclusion)
		if err == nil {
			it.in.run = &runRef{path: p.WorkflowRun.Path, event: p.WorkflowRun.Event, actor: p.WorkflowRun.Actor.Login}
		}
		return it, err
	case p.WorkflowJob != nil:
		c := p.WorkflowJob.Conclusion
		if c == "success" || c == "skipped" || c == "action_required" {
			return intent{}, ignored("job %s", c)
		}
		// The job's payload does not carry the run's title: read it.
		return intent{viaRun: p.WorkflowJob.RunID, conclusion: c}, nil
	}
	return intent{}, ignored("no run")
}

// failedStep is the intent of a run with title that ended with conclusion.
func failedStep(title, conclusion string) (intent, error) {
	switch conclusion {
	case "success", "skipped":
		return intent{}, ignored("run succeeded")
	case "action_required":
		// Waiting for someone's approval is not a failure of the step.
		return intent{}, ignored("run waits for approval")
	}
	step, ref, ok := codec.StepInText(title)
	if !ok {
		return intent{}, ignored("run %q carries no step id", title)
	}
	n := issueOfStep(ref)
	if n == 0 {
		return intent{}, ignored("step %s of no issue", step)
	}
	ev := pipeline.StepFailure(ref.Session, step, "the job ended "+conclusion+" without a result")
	return intent{issue: n, in: input{fail: &ev}}, nil
}

// selfEventCounts: deliveries the bot's own identity may cause that still
// matter: runs it dispatched ending, and checks reported under its App
// (bazinga creates no check runs or statuses itself, so none loops).
func selfEventCounts(event string) bool {
	switch event {
	case "workflow_run", "workflow_job", "check_run", "check_suite", "status":
		return true
	}
	return false
}
