package bot

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/stretchr/testify/require"
)

// githubSnapshot is what GitHub shows that a delivery's run can change:
// every comment (by id) but the tracking comment (its state is compared on
// its own), every issue's and PR's labels and state, the branches, the
// workflow runs.
func githubSnapshot(f *fakeGitHub) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for _, c := range f.comments {
		if strings.Contains(c.Body, codec.StateMarker) {
			continue
		}
		out[fmt.Sprintf("comment %d on #%d by %s", c.ID, c.Issue, c.Author)] = c.Body
	}
	for n, is := range f.issues {
		out[fmt.Sprintf("#%d", n)] = fmt.Sprintf("state %s labels %v", is.State, is.Labels)
		if is.pr != nil {
			out[fmt.Sprintf("PR #%d", n)] = fmt.Sprintf("%s draft %v merged %v head %s base %s", is.pr.State, is.pr.Draft, is.pr.Merged, is.pr.Head, is.pr.Base)
		}
	}
	for ref, sha := range f.refs {
		out[ref] = sha
	}
	for _, r := range f.runs {
		out[fmt.Sprintf("run %d", r.ID)] = r.Status + " " + r.Title
	}
	return out
}

// snapshotDiff names what changed between two snapshots, shortly.
func snapshotDiff(a, b map[string]string) []string {
	var out []string
	for k, v := range b {
		old, ok := a[k]
		switch {
		case !ok:
			out = append(out, "new "+k+": "+firstLine(v))
		case old != v:
			out = append(out, "changed "+k+": "+firstLine(v))
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			out = append(out, "gone "+k)
		}
	}
	slices.Sort(out)
	return out
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	if len(l) > 120 {
		l = l[:120] + "…"
	}
	return l
}

// TestDeliveryRunTwiceAfterKill: the durable queue runs a delivery again
// when bazinga serve died after the delivery's GitHub writes and before the
// queue recorded the run (those writes cannot share the queue's
// transaction). The second run, by a fresh bot (nothing in memory, as after
// the restart), changes nothing GitHub shows: no comment twice, no label,
// branch, PR or run more, and the session in the tracking comment is the
// same (only its outbox may shrink: the second run confirms the effects the
// first carried out). Each row leaves one delivery queued, runs it, "kills"
// the process, and runs it again.
func TestDeliveryRunTwiceAfterKill(t *testing.T) {
	inSession := func(s *fakeSession) {
		s.start()
		s.steps(20)
		s.drain()
	}
	for _, tc := range []struct {
		name   string
		config string
		// setup leaves the delivery to run twice as the only one queued.
		setup func(s *fakeSession)
		// posted is in a bot comment the first run writes.
		posted string
	}{
		{name: "help", setup: func(s *fakeSession) {
			inSession(s)
			s.comment("alice", s.issue, "/bazinga help")
		}, posted: "bazinga commands"},
		{name: "unknown command", setup: func(s *fakeSession) {
			inSession(s)
			s.comment("alice", s.issue, "/bazinga frobnicate")
		}, posted: "bazinga commands"},
		{name: "help on a group PR", setup: func(s *fakeSession) {
			inSession(s)
			prs := s.prs()
			require.NotEmpty(t, prs)
			s.comment("alice", prs[0].Number, "/bazinga help")
		}, posted: "bazinga commands"},
		{name: "command without a session", setup: func(s *fakeSession) {
			s.issue = s.gh.openIssue("alice", "Not a session", "no label")
			s.comment("alice", s.issue, "/bazinga status")
		}, posted: "There is no bazinga session here"},
		{name: "start with a bad configuration", config: "merge:\n  method: teleport\n", setup: func(s *fakeSession) {
			s.issue = s.gh.openIssue("alice", "Add widgets", "Please add widget support.")
			s.label("alice", s.issue, "bazinga", true)
		}, posted: "bazinga did not start"},
		{name: "start", setup: func(s *fakeSession) {
			s.issue = s.gh.openIssue("alice", "Add widgets", "Please add widget support.\n\n- [ ] criteria")
			s.label("alice", s.issue, "bazinga", true)
		}, posted: "Session started"},
		{name: "status in a session", setup: func(s *fakeSession) {
			inSession(s)
			s.comment("alice", s.issue, "/bazinga status")
		}},
		{name: "stop", setup: func(s *fakeSession) {
			inSession(s)
			s.comment("alice", s.issue, "/bazinga stop")
		}, posted: "Session stopped"},
		{name: "refusal", setup: func(s *fakeSession) {
			inSession(s)
			s.comment("mallory", s.issue, "/bazinga stop")
		}, posted: "only people with write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newFakeSession(t, 2, tc.config)
			tc.setup(s)
			require.Len(t, s.queue, 1, "one delivery to run twice")
			d := s.queue[0]
			s.drain()
			once := githubSnapshot(s.gh)
			if tc.posted != "" {
				var bodies []string
				for _, c := range s.gh.comments {
					if c.Author == fakeBotLogin {
						bodies = append(bodies, c.Body)
					}
				}
				assert.True(t, slices.ContainsFunc(bodies, func(b string) bool { return strings.Contains(b, tc.posted) }),
					"the first run posts %q", tc.posted)
			}
			writes := len(s.gh.recorded(true))
			stOnce, _ := s.state()
			s.restart()
			s.process(d)
			assert.Empty(t, snapshotDiff(once, githubSnapshot(s.gh)), "the second run changed what GitHub shows")
			stTwice, _ := s.state()
			for _, p := range stTwice.Pending {
				assert.True(t, slices.ContainsFunc(stOnce.Pending, func(q codec.PendingEffect) bool { return q.ID == p.ID }),
					"the second run added effect %s to the outbox", p.ID)
			}
			stOnce.Pending, stTwice.Pending = nil, nil
			assert.Equal(t, stOnce, stTwice, "the second run changed the session")
			for _, c := range s.gh.recorded(true)[writes:] {
				assert.NotContains(t, []string{"CreateComment", "CreatePR", "CreateRef", "DispatchWorkflow", "CreateReview"}, c.Op,
					"the second run created something: %s %v", c.Op, c.Args)
			}
		})
	}
}
