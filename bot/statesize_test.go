package bot

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// Sessions of every size the budgets allow (issue 27), driven through the
// engine, for the property test and the measurements of BENCHMARKS.md.

// randText is n bytes of random printable ASCII: as incompressible as text
// goes byte for byte (gzip keeps about 83% of it; code, paths and hashes
// in real tasks come close), with the characters JSON escapes among them.
func randText(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(0x20 + r.IntN(0x7f-0x20))
	}
	return string(b)
}

// sizeSpec is the shape of a generated session.
type sizeSpec struct {
	groups int
	// nameBytes and taskBytes are each group's texts; criteria the success
	// criteria, each of criterionBytes.
	nameBytes, taskBytes     int
	criteria, criterionBytes int
	// reqBytes is the issue body's size.
	reqBytes int
	// steps is how many results to feed (the history), each with summaries
	// of summaryBytes per line and a handoff of about handoffBytes.
	steps                      int
	summaryBytes, handoffBytes int
	// random picks statuses at random (any the role may report), else the
	// steps take the happy path and go round QA.
	random bool
}

// generated is a session state as the bot would store it.
func generated(r *rand.Rand, sp sizeSpec) codec.State {
	cfg := pipeline.DefaultConfig()
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	s, _ := pipeline.Reconcile(pipeline.Session{}, []pipeline.Event{pipeline.Started("4242", randText(r, sp.reqBytes), "main")}, now, cfg)
	var groups []pipeline.PlanGroup
	for i := range sp.groups {
		groups = append(groups, pipeline.PlanGroup{ID: fmt.Sprintf("g%02d", i), Name: randText(r, sp.nameBytes), Task: randText(r, sp.taskBytes), Phase: 1 + i%3})
	}
	var criteria []string
	for range sp.criteria {
		criteria = append(criteria, randText(r, sp.criterionBytes))
	}
	plan, _ := json.Marshal(map[string]any{"plan": pipeline.Plan{Mode: "parallel", Groups: groups, SuccessCriteria: criteria}})
	result := func(st pipeline.Step, status pipeline.Status, handoff json.RawMessage) pipeline.Event {
		var sum []string
		for range 1 + r.IntN(pipeline.MaxSummaryLines) {
			sum = append(sum, randText(r, sp.summaryBytes))
		}
		return pipeline.StepResult(s.ID, st.ID, pipeline.Result{Status: status, Summary: sum, Handoff: handoff})
	}
	fed := 0
	for fed < sp.steps && !s.Status.Terminal() {
		var evs []pipeline.Event
		for _, st := range s.InFlight() {
			var status pipeline.Status
			var handoff json.RawMessage
			switch {
			case st.Role == pipeline.RolePM && len(s.Groups) == 0:
				status, handoff = pipeline.StatusPlanningComplete, plan
			case sp.random:
				allowed := pipeline.AllowedStatuses(st.Role)
				status = allowed[r.IntN(len(allowed))]
			default:
				status = happy(r, st)
			}
			if handoff == nil && sp.handoffBytes > 0 {
				handoff, _ = json.Marshal(map[string]any{"notes": randText(r, r.IntN(sp.handoffBytes+1))})
			}
			evs = append(evs, result(st, status, handoff))
			fed++
		}
		if len(evs) == 0 {
			// Nothing in flight: a question or a pause waits for a person.
			evs = append(evs, pipeline.CommandEvent(s.ID, "alice", pipeline.Command{Kind: pipeline.CommandAnswer, Text: randText(r, pipeline.MaxAnswerBytes)}),
				pipeline.CommandEvent(s.ID, "alice", pipeline.Command{Kind: pipeline.CommandResume}))
			fed++
		}
		now = now.Add(time.Minute)
		s, _ = pipeline.Reconcile(s, evs, now, cfg)
	}
	st := codec.State{V: codec.StateVersion, Repo: "acme/widgets", Issue: 4242, Session: s, Config: cfg, RepoURL: "https://github.com/acme/widgets"}
	for i, g := range s.Groups {
		pr := st.PR(g.ID)
		pr.Number, pr.BodyHash, pr.Label, pr.Branch = 5000+i, textHash(g.Task), "bazinga:qa", true
	}
	return st
}

// happy is the status a step reports on the way to a merge, with a QA
// failure or a change request now and then so the history grows.
func happy(r *rand.Rand, st pipeline.Step) pipeline.Status {
	switch st.Role {
	case pipeline.RoleDeveloper, pipeline.RoleSenior:
		return pipeline.StatusReadyForQA
	case pipeline.RoleQA:
		if r.IntN(4) == 0 {
			return pipeline.StatusFail
		}
		return pipeline.StatusPass
	case pipeline.RoleTechLead:
		if st.Purpose == pipeline.PurposeReview && r.IntN(6) == 0 {
			return pipeline.StatusChangesRequested
		}
		return pipeline.StatusApproved
	case pipeline.RoleMerge:
		return pipeline.StatusMergeSuccess
	case pipeline.RoleValidate:
		return pipeline.StatusAccept
	case pipeline.RoleRequirements:
		return pipeline.StatusReadyForReview
	case pipeline.RoleInvestigator:
		return pipeline.StatusRootCauseFound
	}
	return pipeline.StatusContinue
}
