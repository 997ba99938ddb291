package bot

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two results logged in the same second and applied live in the other
// order than their comments': a rebuild (the tracking comment deleted)
// numbers the steps they started as the live session did, because the
// steps named later in the log (results, run titles) say which came first.
func TestRebuildNumbersStepsAsTheLiveSession(t *testing.T) {
	s := newFakeSession(t, 2, "")
	dev := func(step string) bool { return strings.Contains(step, "/developer/") }
	s.hold = dev
	s.start()
	s.steps(40)
	var devRuns []*fakeRun
	for _, r := range s.gh.runs {
		if dev(r.inputs["step"]) && r.Status != "completed" {
			devRuns = append(devRuns, r)
		}
	}
	require.Len(t, devRuns, 2, "both groups' developers at work")
	// Both jobs post their results in the same second (the clock does not
	// move between them); the bot hears of them in the reverse order.
	s.hold = nil
	for _, r := range devRuns {
		s.job(r)
	}
	require.GreaterOrEqual(t, len(s.queue), 2)
	for i, j := 0, len(s.queue)-1; i < j; i, j = i+1, j-1 {
		s.queue[i], s.queue[j] = s.queue[j], s.queue[i]
	}
	s.drain()
	live, ok := s.state()
	require.True(t, ok)
	ids := func(ss pipeline.Session) []string {
		var out []string
		for _, st := range ss.Steps {
			out = append(out, st.ID+" "+st.State.String())
		}
		return out
	}

	// The tracking comment is deleted; the next reconcile rebuilds.
	id, _ := s.trackingComment()
	require.NotZero(t, id)
	s.gh.mu.Lock()
	for i, c := range s.gh.comments {
		if c.ID == id {
			s.gh.comments = append(s.gh.comments[:i], s.gh.comments[i+1:]...)
			break
		}
	}
	s.gh.mu.Unlock()
	ref := ghapi.RepoRef{Owner: coreOwner, Name: coreRepo}
	require.NoError(t, s.bot.ReconcileIssue(context.Background(), 0, ref, s.issue))
	rebuilt, ok := s.state()
	require.True(t, ok)
	assert.Equal(t, ids(live.Session), ids(rebuilt.Session))
}

func TestOrderTies(t *testing.T) {
	at := time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC)
	res := func(step string, order int64) logEntry {
		return logEntry{at: at, order: order, result: &codec.ResultRecord{Step: step}}
	}
	ev := logEntry{at: at, order: 2, events: []pipeline.Event{{Kind: pipeline.EventCommand}}}
	steps := func(es []logEntry) []string {
		var out []string
		for _, e := range es {
			if e.result != nil {
				out = append(out, e.result.Step)
			} else {
				out = append(out, "event")
			}
		}
		return out
	}
	known := func(ids ...string) []codec.StepRef {
		var out []codec.StepRef
		for _, id := range ids {
			sr, ok := codec.ParseStepID(id)
			require.True(t, ok)
			out = append(out, sr)
		}
		return out
	}
	tests := []struct {
		name  string
		known []codec.StepRef
		want  []string
	}{
		{"the group whose next step is lower went first", known("1/B/qa/4", "1/A/qa/5"),
			[]string{"1/B/developer/3", "event", "1/A/developer/2"}},
		{"next steps in comment order: unchanged", known("1/A/qa/4", "1/B/qa/5"),
			[]string{"1/A/developer/2", "event", "1/B/developer/3"}},
		{"one next step unknown: comment order", known("1/B/qa/4"),
			[]string{"1/A/developer/2", "event", "1/B/developer/3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			es := []logEntry{res("1/A/developer/2", 1), ev, res("1/B/developer/3", 3)}
			orderTies(es, tc.known)
			assert.Equal(t, tc.want, steps(es))
		})
	}
}
