package bot

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// fixture reads a recorded payload and applies edits to its JSON object
// (a path of keys to a value), so each case says what differs.
func fixture(t *testing.T, name string, edits map[string]any) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "webhooks", name))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	for path, v := range edits {
		keys := splitPath(path)
		cur := m
		for _, k := range keys[:len(keys)-1] {
			next, ok := cur[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[k] = next
			}
			cur = next
		}
		cur[keys[len(keys)-1]] = v
	}
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}

func splitPath(p string) []string {
	var out []string
	start := 0
	for i := 0; i < len(p); i++ {
		if p[i] == '.' {
			out = append(out, p[start:i])
			start = i + 1
		}
	}
	return append(out, p[start:])
}

// TestTranslate: each event type's payload becomes the session, the events,
// the replies and what must be checked on GitHub — with no GitHub at all.
func TestTranslate(t *testing.T) {
	resultBody := codec.RenderResultComment(codec.ResultRecord{Step: "1/A/qa/4", Role: pipeline.RoleQA, Group: "A",
		Result: pipeline.Result{Status: pipeline.StatusPass, Summary: []string{"ok"}}})
	failureBody := codec.RenderFailureComment(codec.FailureRecord{Step: "1/A/qa/4", Role: pipeline.RoleQA, Group: "A", Reason: "timed out"})
	permanentBody := codec.RenderFailureComment(codec.FailureRecord{Step: "1/A/qa/4", Role: pipeline.RoleQA, Group: "A",
		Reason: "credentials refused", Permanent: true})
	tr := translator{login: "bazinga[bot]", startLabel: "bazinga"}
	tests := []struct {
		name    string
		event   string
		fixture string
		edits   map[string]any
		ignored string // the reason, when the delivery needs no work
		check   func(t *testing.T, it intent)
	}{
		{name: "label starts a session, by whom", event: "issues", fixture: "core_issues_labeled.json", check: func(t *testing.T, it intent) {
			assert.Equal(t, 1, it.issue)
			require.NotNil(t, it.in.start)
			assert.Equal(t, "Add widgets", it.in.start.title)
			require.NotNil(t, it.actor)
			assert.Equal(t, "alice", it.actor.Login)
			require.Len(t, it.in.events, 1)
			assert.Equal(t, pipeline.CommandResume, it.in.events[0].Command.Kind, "a label resumes a paused session")
		}},
		{name: "another label", event: "issues", fixture: "core_issues_labeled.json", edits: map[string]any{"label.name": "bug"}, ignored: "not the bazinga label"},
		{name: "unlabel pauses", event: "issues", fixture: "core_issues_labeled.json", edits: map[string]any{"action": "unlabeled"}, check: func(t *testing.T, it intent) {
			require.Len(t, it.in.events, 1)
			assert.Equal(t, pipeline.CommandPause, it.in.events[0].Command.Kind)
			assert.Equal(t, it.in.events, it.in.record, "a pause is recorded for a rebuild")
			assert.Equal(t, "alice", it.actor.Login)
		}},
		{name: "the bot's own delivery", event: "issues", fixture: "core_issues_labeled.json", edits: map[string]any{"sender.login": "bazinga[bot]"}, ignored: "sent by the bot itself"},
		{name: "a command of someone unrelated to the repository", event: "issue_comment", fixture: "core_issue_comment_created.json",
			edits: map[string]any{"comment.body": "/bazinga status", "comment.user": map[string]any{"login": "eve", "type": "User"}, "sender.login": "eve",
				"comment.author_association": "NONE"},
			check: func(t *testing.T, it intent) {
				assert.False(t, it.refuse, "someone without a role is not answered (issue 21)")
			}},
		{name: "a command on the issue", event: "issue_comment", fixture: "core_issue_comment_created.json",
			edits: map[string]any{"comment.body": "/bazinga retry A", "comment.user": map[string]any{"login": "alice", "type": "User"}, "sender.login": "alice",
				"comment.author_association": "COLLABORATOR"},
			check: func(t *testing.T, it intent) {
				assert.Equal(t, 1, it.issue)
				assert.True(t, it.refuse, "an unauthorised collaborator is told")
				require.Len(t, it.in.events, 2)
				assert.Equal(t, pipeline.CommandRetry, it.in.events[0].Command.Kind)
				assert.Equal(t, "A", it.in.events[0].Command.Group)
				assert.Equal(t, pipeline.EventTick, it.in.events[1].Kind)
			}},
		{name: "a command on a PR names its session through the PR", event: "issue_comment", fixture: "core_issue_comment_created.json",
			edits: map[string]any{"comment.body": "/bazinga stop", "comment.user": map[string]any{"login": "alice", "type": "User"}, "sender.login": "alice",
				"issue.number": 7, "issue.pull_request": map[string]any{"url": "x"}},
			check: func(t *testing.T, it intent) {
				assert.Zero(t, it.issue)
				assert.Equal(t, 7, it.viaPR)
				assert.Equal(t, 7, it.in.replyTo)
			}},
		{name: "help needs no session", event: "issue_comment", fixture: "core_issue_comment_created.json",
			edits: map[string]any{"comment.body": "/bazinga help", "comment.user": map[string]any{"login": "alice", "type": "User"}, "sender.login": "alice"},
			check: func(t *testing.T, it intent) { assert.Contains(t, it.help, "/bazinga resume") }},
		{name: "a comment without a command", event: "issue_comment", fixture: "core_issue_comment_created.json",
			edits: map[string]any{"comment.body": "thanks!", "comment.user": map[string]any{"login": "alice", "type": "User"}, "sender.login": "alice"}, ignored: "no command"},
		{name: "commands from other bots", event: "issue_comment", fixture: "core_issue_comment_created.json",
			edits: map[string]any{"comment.body": "/bazinga stop", "comment.user": map[string]any{"login": "other[bot]", "type": "Bot"}, "sender.login": "other[bot]"}, ignored: "commands from bots"},
		{name: "a result comment", event: "issue_comment", fixture: "core_issue_comment_created.json",
			edits: map[string]any{"comment.body": resultBody, "comment.user": map[string]any{"login": "github-actions[bot]", "type": "Bot"}, "sender.login": "github-actions[bot]",
				"issue.number": 2, "issue.pull_request": map[string]any{"url": "x"}},
			check: func(t *testing.T, it intent) {
				assert.Equal(t, 1, it.issue, "the step id names the session")
				require.NotNil(t, it.in.result)
				assert.Equal(t, "github-actions[bot]", it.in.result.author)
				assert.Equal(t, 2, it.in.result.number)
				assert.Nil(t, it.actor, "a result is trusted by its author, checked against the state")
			}},
		{name: "a failure report", event: "issue_comment", fixture: "core_issue_comment_created.json",
			edits: map[string]any{"comment.body": failureBody, "comment.user": map[string]any{"login": "github-actions[bot]", "type": "Bot"}, "sender.login": "github-actions[bot]"},
			check: func(t *testing.T, it intent) {
				require.NotNil(t, it.in.fail)
				assert.Equal(t, "timed out", it.in.fail.Reason)
				assert.Equal(t, "1", it.in.fail.Session)
				assert.False(t, it.in.fail.Permanent)
				assert.Equal(t, "github-actions[bot]", it.in.failAuthor)
			}},
		{name: "a failure retrying cannot fix", event: "issue_comment", fixture: "core_issue_comment_created.json",
			edits: map[string]any{"comment.body": permanentBody, "comment.user": map[string]any{"login": "github-actions[bot]", "type": "Bot"}, "sender.login": "github-actions[bot]"},
			check: func(t *testing.T, it intent) {
				require.NotNil(t, it.in.fail)
				assert.Equal(t, "credentials refused", it.in.fail.Reason)
				assert.True(t, it.in.fail.Permanent)
			}},
		{name: "a result the App posted (a step job with an exchanged token)", event: "issue_comment", fixture: "core_issue_comment_created.json",
			edits: map[string]any{"comment.body": resultBody, "comment.user": map[string]any{"login": "bazinga[bot]", "type": "Bot"}, "sender.login": "bazinga[bot]"},
			check: func(t *testing.T, it intent) {
				require.NotNil(t, it.in.result, "applied, not ignored as the bot's own comment")
				assert.Equal(t, "bazinga[bot]", it.in.result.author)
			}},
		{name: "a failure the App posted", event: "issue_comment", fixture: "core_issue_comment_created.json",
			edits: map[string]any{"comment.body": failureBody, "comment.user": map[string]any{"login": "bazinga[bot]", "type": "Bot"}, "sender.login": "bazinga[bot]"},
			check: func(t *testing.T, it intent) {
				require.NotNil(t, it.in.fail)
				assert.Equal(t, "bazinga[bot]", it.in.failAuthor)
			}},
		{name: "the bot's own other comment", event: "issue_comment", fixture: "core_issue_comment_created.json",
			edits:   map[string]any{"comment.body": "/bazinga stop", "comment.user": map[string]any{"login": "bazinga[bot]", "type": "Bot"}, "sender.login": "bazinga[bot]"},
			ignored: "sent by the bot itself"},
		{name: "a PR closed", event: "pull_request", fixture: "core_pull_request_closed.json", check: func(t *testing.T, it intent) {
			require.Len(t, it.in.events, 1)
			assert.Equal(t, pipeline.EventPRClosed, it.in.events[0].Kind)
			assert.Equal(t, "A", it.in.events[0].Group)
		}},
		{name: "a fork's PR with a group branch's name", event: "pull_request", fixture: "core_pull_request_closed.json",
			edits: map[string]any{"pull_request.head.repo": map[string]any{"full_name": "mallory/widgets"}}, ignored: "comes from another repository"},
		{name: "a PR whose head repository is gone", event: "pull_request", fixture: "core_pull_request_closed.json",
			edits: map[string]any{"pull_request.head.repo": nil}, ignored: "comes from another repository"},
		{name: "a run waiting for approval is no failure", event: "workflow_run", fixture: "core_workflow_run_completed.json",
			edits: map[string]any{"workflow_run.conclusion": "action_required"}, ignored: "waits for approval"},
		// Issue 28: a push to a group branch that bazinga did not make.
		{name: "a human's push to a group PR", event: "pull_request", fixture: "core_pull_request_closed.json",
			edits: map[string]any{"action": "synchronize", "after": "def5678", "sender": map[string]any{"login": "alice", "type": "User"}},
			check: func(t *testing.T, it intent) {
				require.Len(t, it.in.events, 1)
				assert.Equal(t, pipeline.Pushed("1", "A", "def5678", "alice"), it.in.events[0])
				require.NotNil(t, it.in.pr, "counted only for the group's recorded PR")
				assert.Nil(t, it.actor, "whoever pushed to the repository's branch may")
			}},
		{name: "a push without after: the PR's head", event: "pull_request", fixture: "core_pull_request_closed.json",
			edits: map[string]any{"action": "synchronize", "pull_request.head.sha": "def5678", "sender": map[string]any{"login": "alice", "type": "User"}},
			check: func(t *testing.T, it intent) {
				assert.Equal(t, "def5678", it.in.events[0].Commit)
			}},
		{name: "a step job's push", event: "pull_request", fixture: "core_pull_request_closed.json",
			edits:   map[string]any{"action": "synchronize", "after": "def5678", "sender": map[string]any{"login": "github-actions[bot]", "type": "Bot"}},
			ignored: "a push by the bot github-actions[bot]"},
		{name: "a push to a fork's branch of a group's name", event: "pull_request", fixture: "core_pull_request_closed.json",
			edits: map[string]any{"action": "synchronize", "after": "def5678", "sender": map[string]any{"login": "mallory", "type": "User"},
				"pull_request.head.repo": map[string]any{"full_name": "mallory/widgets"}}, ignored: "comes from another repository"},
		{name: "a PR of another branch", event: "pull_request", fixture: "core_pull_request_closed.json", edits: map[string]any{"pull_request.head.ref": "feature"}, ignored: "not a group PR"},
		{name: "an approval needs a writer", event: "pull_request_review", fixture: "core_pull_request_closed.json",
			edits: map[string]any{"action": "submitted", "review": map[string]any{"id": 1, "state": "approved", "commit_id": "abc123",
				"user": map[string]any{"login": "carol", "type": "User"}}},
			check: func(t *testing.T, it intent) {
				assert.Equal(t, pipeline.ReviewApproved, it.in.events[0].Review)
				assert.Equal(t, "abc123", it.in.events[0].Commit, "an approval is for the head it was given on")
				require.NotNil(t, it.actor)
				assert.Equal(t, "carol", it.actor.Login)
			}},
		{name: "a comment review needs nobody", event: "pull_request_review", fixture: "core_pull_request_closed.json",
			edits: map[string]any{"action": "submitted", "review": map[string]any{"id": 1, "state": "commented", "user": map[string]any{"login": "carol", "type": "User"}}},
			check: func(t *testing.T, it intent) { assert.Nil(t, it.actor) }},
		{name: "a run that failed", event: "workflow_run", fixture: "core_workflow_run_completed.json", edits: map[string]any{"workflow_run.conclusion": "failure"},
			check: func(t *testing.T, it intent) {
				require.NotNil(t, it.in.fail)
				assert.Equal(t, "1/_/pm/1", it.in.fail.Step)
				assert.Equal(t, 1, it.issue)
				require.NotNil(t, it.in.run, "the run is checked against the session's workflow")
			}},
		{name: "a run that succeeded", event: "workflow_run", fixture: "core_workflow_run_completed.json", ignored: "run succeeded"},
		{name: "a failed job reads its run", event: "workflow_job", fixture: "core_workflow_job_completed.json", edits: map[string]any{"workflow_job.conclusion": "cancelled"},
			check: func(t *testing.T, it intent) {
				assert.Equal(t, int64(5000001), it.viaRun)
				assert.Equal(t, "cancelled", it.conclusion)
			}},
		{name: "an event bazinga does not read", event: "watch", fixture: "core_ping.json", ignored: "event watch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ParseDelivery(Delivery{ID: "d1", Event: tc.event, Payload: fixture(t, tc.fixture, tc.edits)})
			require.NoError(t, err)
			p, err := payloadOf(d)
			require.NoError(t, err)
			it, err := tr.translate(d, p)
			if tc.ignored != "" {
				require.ErrorIs(t, err, ErrIgnored)
				assert.Contains(t, err.Error(), tc.ignored)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "d1", it.in.delivery)
			tc.check(t, it)
		})
	}
}

// TestParseDeliveryDecodesOnce: routing fields come from the one decode,
// and Key reads the same decoded payload.
func TestParseDeliveryDecodesOnce(t *testing.T) {
	d, err := ParseDelivery(Delivery{ID: "d1", Event: "issues", Payload: fixture(t, "core_issues_labeled.json", nil)})
	require.NoError(t, err)
	assert.Equal(t, "labeled", d.Action)
	assert.Equal(t, int64(1), d.Installation)
	assert.Equal(t, "acme/widgets", d.Repo)
	d.Payload = []byte("not json any more")
	b := &Bot{}
	assert.Equal(t, "acme/widgets#1", b.Key(d), "Key does not decode again")
	_, err = ParseDelivery(Delivery{ID: "d2", Event: "issues", Payload: []byte("{")})
	require.Error(t, err)
}

// TestBound: a delivery's PR must be the group's recorded PR, and a failed
// run a run of the agent workflow that the orchestrator dispatched.
func TestBound(t *testing.T) {
	st := codec.State{Config: pipeline.DefaultConfig(), PRs: []codec.GroupPR{{Group: "A", Number: 5}}}
	b := &Bot{o: Options{Login: "bazinga[bot]"}}
	wf := ".github/workflows/" + st.Config.GitHub.AgentWorkflow
	tests := []struct {
		name string
		in   input
		ok   bool
	}{
		{"the group's PR", input{pr: &prRef{number: 5, group: "A"}}, true},
		{"another PR with the group's branch name", input{pr: &prRef{number: 9, group: "A"}}, false},
		{"a group without a PR yet", input{pr: &prRef{number: 5, group: "B"}}, false},
		{"a dispatched run of the agent workflow", input{run: &runRef{path: wf, event: "workflow_dispatch", actor: "bazinga[bot]"}}, true},
		{"another workflow titled with a step id", input{run: &runRef{path: ".github/workflows/ci.yml", event: "workflow_dispatch", actor: "bazinga[bot]"}}, false},
		{"the agent workflow started by a push", input{run: &runRef{path: wf, event: "push", actor: "bazinga[bot]"}}, false},
		{"the agent workflow dispatched by hand with a step's id", input{run: &runRef{path: wf, event: "workflow_dispatch", actor: "mallory"}}, false},
		{"a run whose actor is unknown", input{run: &runRef{path: wf, event: "workflow_dispatch"}}, false},
	}
	for _, tc := range tests {
		err := b.bound(st, tc.in)
		if tc.ok {
			assert.NoError(t, err, tc.name)
		} else {
			assert.ErrorIs(t, err, ErrIgnored, tc.name)
		}
	}
}

// TestResultCarriesTheHead: the head a job reports after a step reaches the
// engine, which counts approvals only for the code that merges.
func TestResultCarriesTheHead(t *testing.T) {
	s, _ := pipeline.Reconcile(pipeline.Session{}, []pipeline.Event{pipeline.Started("7", "r", "main")}, time.Now(), pipeline.DefaultConfig())
	pm := s.InFlight()[0]
	ev, ok := resultEvent(s, codec.ResultRecord{Step: pm.ID, Role: pm.Role, Group: pm.Group, Head: "def456",
		Result: pipeline.Result{Status: pipeline.StatusContinue}}, false)
	require.True(t, ok)
	assert.Equal(t, "def456", ev.Commit)
}
