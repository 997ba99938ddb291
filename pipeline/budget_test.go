package pipeline

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// groupsOf builds n plan groups with names and tasks of the given sizes.
func groupsOf(n, nameBytes, taskBytes int) []PlanGroup {
	out := make([]PlanGroup, n)
	for i := range out {
		id := fmt.Sprintf("g%d", i)
		out[i] = PlanGroup{ID: id, Name: strings.Repeat("n", nameBytes), Task: strings.Repeat("t", taskBytes), Phase: 1}
	}
	return out
}

// TestPlanBudget: a plan whose texts are over a limit goes back to the pm
// with the limit and what to shorten, and none of it enters the session;
// a plan at the limits is used.
func TestPlanBudget(t *testing.T) {
	perGroup := MaxPlanTextBytes / MaxGroups // names and tasks of MaxGroups groups at the total limit
	cases := []struct {
		name     string
		groups   []PlanGroup
		criteria []string
		refused  []string // parts of the pm's feedback; none: the plan is used
	}{
		{name: "one group at the task limit", groups: groupsOf(1, MaxGroupNameBytes, MaxTaskBytes)},
		{name: "MaxGroups groups at the total limit", groups: groupsOf(MaxGroups, 10, perGroup-10)},
		{name: "a task one byte over", groups: groupsOf(1, 5, MaxTaskBytes+1),
			refused: []string{`group "g0": task is 2001 bytes, the limit is 2000: shorten it by 1 or split the group`}},
		{name: "a name over", groups: groupsOf(1, MaxGroupNameBytes+1, 10),
			refused: []string{`group "g0": name is 101 bytes, the limit is 100`}},
		{name: "the total over", groups: groupsOf(MaxGroups, 10, perGroup-9),
			refused: []string{"the groups' names and tasks total 12032 bytes, the session's limit is 12000: shorten them by 32 bytes (about 187 bytes per group for 64 groups) or plan fewer groups"}},
		{name: "64 groups of 2,000-byte tasks", groups: groupsOf(MaxGroups, 20, 2000),
			refused: []string{"the groups' names and tasks total 129280 bytes, the session's limit is 12000"}},
		{name: "a criterion over", groups: groupsOf(1, 5, 5), criteria: []string{strings.Repeat("c", MaxCriterionBytes+1)},
			refused: []string{"success criterion 1 is 401 bytes, the limit is 400"}},
		{name: "the criteria over", groups: groupsOf(1, 5, 5), criteria: []string{strings.Repeat("c", 400), strings.Repeat("d", 400), strings.Repeat("e", 401)},
			refused: []string{"success criterion 3 is 401 bytes", "the success criteria total 1201 bytes, the limit is 1200"}},
		{name: "bytes, not characters", groups: groupsOf(1, 5, 0), criteria: []string{strings.Repeat("é", 201)},
			refused: []string{"success criterion 1 is 402 bytes"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, DefaultConfig())
			h.start("build the thing")
			if tc.name == "bytes, not characters" {
				tc.groups[0].Task = "do it"
			}
			b, err := json.Marshal(map[string]any{"plan": Plan{Mode: "parallel", Groups: tc.groups, SuccessCriteria: tc.criteria}})
			require.NoError(t, err)
			h.report(LeadGroup, StatusPlanningComplete, string(b), "planned")
			if len(tc.refused) == 0 {
				assert.Len(t, h.s.Groups, len(tc.groups))
				return
			}
			assert.Empty(t, h.s.Groups, "nothing of a refused plan enters the session")
			assert.Empty(t, h.s.SuccessCriteria)
			next := h.inFlight(LeadGroup)
			assert.Equal(t, RolePM, next.Role)
			assert.Contains(t, next.Feedback, "Your plan could not be used: ")
			assert.Contains(t, next.Feedback, "Send PLANNING_COMPLETE with a corrected plan.")
			text := notices(h.actions)
			assert.Contains(t, text, "The pm's plan was refused and sent back for a corrected one: ")
			for _, want := range tc.refused {
				assert.Contains(t, next.Feedback, want)
				assert.Contains(t, text, want, "the issue shows why")
			}
		})
	}
}

// TestPlanBudgetNamesFewGroups: a refusal of many groups over their own
// limit names the first few and counts the rest, so it stays small.
func TestPlanBudgetNamesFewGroups(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.start("build")
	b, _ := json.Marshal(map[string]any{"plan": Plan{Groups: groupsOf(MaxGroups, 10, MaxTaskBytes+5)}})
	h.report(LeadGroup, StatusPlanningComplete, string(b))
	fb := h.inFlight(LeadGroup).Feedback
	assert.Contains(t, fb, `group "g7": task is 2005 bytes`)
	assert.NotContains(t, fb, `group "g8"`)
	assert.Contains(t, fb, "56 more groups are over the name or task limit")
	assert.Less(t, len(fb), 2000)
}

// TestAddedGroupsCountAgainstTheSessionTotal: groups added mid-session
// (CONTINUE, or a plan once groups exist) count with the existing ones.
func TestAddedGroupsCountAgainstTheSessionTotal(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.start("build")
	first := groupsOf(2, 10, 5000)
	for i := range first {
		first[i].Task = strings.Repeat("t", MaxTaskBytes-10)
	}
	b, _ := json.Marshal(map[string]any{"plan": Plan{Groups: first}})
	h.report(LeadGroup, StatusPlanningComplete, string(b))
	require.Len(t, h.s.Groups, 2)
	// Parks group g0 on the pm, which adds groups.
	h.report("g0", StatusBlocked, "", "blocked")
	for h.s.Lead.InFlight == "" {
		st := h.inFlight("g0")
		h.report("g0", StatusBlocked, "", "still blocked "+st.ID)
	}
	var add []PlanGroup
	for i := range 5 {
		add = append(add, PlanGroup{ID: fmt.Sprintf("x%d", i), Task: strings.Repeat("y", MaxTaskBytes)})
	}
	groups := []any{"g0"} // g0 decided: the pm continues it
	for _, g := range add {
		groups = append(groups, g)
	}
	raw, _ := json.Marshal(map[string]any{"groups": groups})
	h.report(LeadGroup, StatusContinue, string(raw))
	assert.Len(t, h.s.Groups, 2, "the added groups are refused")
	fb := h.inFlight(LeadGroup).Feedback
	assert.Contains(t, fb, "the groups you added could not be used")
	assert.Contains(t, fb, "the groups' names and tasks total 14010 bytes, the session's limit is 12000 (4000 of them are the session's existing groups)")
}

func TestContinueFeedbackBudget(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1))
	h.report("A", StatusBlocked, "", "blocked")
	for h.s.Lead.InFlight == "" {
		h.report("A", StatusBlocked, "", "blocked")
	}
	raw, _ := json.Marshal(map[string]any{"groups": []string{"A"}, "feedback": map[string]string{"A": strings.Repeat("f", MaxFeedbackBytes+1)}})
	h.report(LeadGroup, StatusContinue, string(raw))
	next := h.inFlight(LeadGroup)
	assert.Equal(t, RolePM, next.Role)
	assert.Contains(t, next.Feedback, `the feedback for group "A" is 2001 bytes, the limit is 2000`)
	assert.Equal(t, WaitPM, h.group("A").Wait, "the group still waits on the pm")
}

func TestClarificationBudget(t *testing.T) {
	cases := []struct {
		name    string
		handoff clarificationHandoff
		want    string
	}{
		{"question", clarificationHandoff{Question: strings.Repeat("q", MaxQuestionBytes+1)}, "the question is 1001 bytes, the limit is 1000"},
		{"options", clarificationHandoff{Question: "which?", Options: []string{"a", "b", "c", "d", "e", "f", "g"}}, "7 options, the limit is 6"},
		{"option", clarificationHandoff{Question: "which?", Options: []string{strings.Repeat("o", MaxOptionBytes+1)}}, "option 1 is 201 bytes, the limit is 200"},
		{"fallback", clarificationHandoff{Question: "which?", Fallback: strings.Repeat("f", MaxFallbackBytes+1)}, "the fallback is 501 bytes, the limit is 500"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, DefaultConfig())
			h.start("build")
			raw, _ := json.Marshal(tc.handoff)
			h.report(LeadGroup, StatusNeedsClarification, string(raw), "asks")
			assert.Nil(t, h.s.Clarification, "the question is not asked")
			next := h.inFlight(LeadGroup)
			assert.Contains(t, next.Feedback, "Your question could not be asked: it is over the size limits ("+tc.want)
			assert.Empty(t, notices(h.actions), "no question reaches the issue")
		})
	}
}

func TestAnswerBudget(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.start("build")
	h.report(LeadGroup, StatusNeedsClarification, `{"question":"Postgres or SQLite?"}`, "asks")
	require.NotNil(t, h.s.Clarification)
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandAnswer, Text: strings.Repeat("a", MaxAnswerBytes+1)}))
	assert.NotNil(t, h.s.Clarification, "the question still waits")
	assert.Contains(t, notices(h.actions), "The answer is 2001 bytes; the limit is 2000. Shorten it and send it again")
	h.reconcile(CommandEvent("s1", "alice", Command{Kind: CommandAnswer, Text: strings.Repeat("a", MaxAnswerBytes)}))
	assert.Nil(t, h.s.Clarification, "an answer at the limit is taken")
}

func TestBoundRequirements(t *testing.T) {
	short := strings.Repeat("r", MaxRequirementsBytes)
	assert.Equal(t, short, BoundRequirements(short))

	long := strings.Repeat("ü", 65536/2) + "THE END"
	got := BoundRequirements(long)
	assert.LessOrEqual(t, len(got), MaxRequirementsBytes)
	assert.True(t, utf8.ValidString(got), "no character is cut")
	assert.True(t, strings.HasPrefix(got, "üüü"))
	assert.True(t, strings.HasSuffix(got, "THE END"))
	assert.Contains(t, got, fmt.Sprintf("%s the full text is %d bytes, sha256 %s]", RequirementsNote, len(long), RequirementsDigest(long)))

	h := newHarness(t, DefaultConfig())
	h.start(long)
	assert.Equal(t, got, h.s.Requirements, "the session keeps the bounded requirements")
}

func TestShrinkHandoff(t *testing.T) {
	long := strings.Repeat("x", 5000)
	cases := []struct {
		name string
		in   string
	}{
		{"long string", `{"notes":"` + long + `"}`},
		{"long array", `{"files":[` + strings.TrimSuffix(strings.Repeat(`"a/b/c.go",`, 600), ",") + `]}`},
		{"many keys", func() string {
			var parts []string
			for i := range 400 {
				parts = append(parts, fmt.Sprintf(`"key%03d":"%s"`, i, strings.Repeat("v", 20)))
			}
			return "{" + strings.Join(parts, ",") + "}"
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.True(t, json.Valid([]byte(tc.in)))
			out := ShrinkHandoff(json.RawMessage(tc.in), MaxStoredHandoffBytes)
			assert.LessOrEqual(t, len(out), MaxStoredHandoffBytes)
			var obj map[string]any
			require.NoError(t, json.Unmarshal(out, &obj), "still a JSON object")
			assert.Contains(t, string(out), "truncated", "the cut is visible")
			assert.Equal(t, string(out), string(ShrinkHandoff(json.RawMessage(tc.in), MaxStoredHandoffBytes)), "deterministic")
		})
	}
	small := json.RawMessage(`{"a":1}`)
	assert.Equal(t, small, ShrinkHandoff(small, 100))
}

// TestStoredTextsAreBounded: a routed result keeps at most what a prompt
// shows of its handoff (the pm's BAZINGA whole), summary lines are bounded,
// and the feedback a step is given too.
func TestStoredTextsAreBounded(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1))
	big := `{"concerns":["` + strings.Repeat("c", 9000) + `"]}`
	dev := h.report("A", StatusReadyForQA, big, strings.Repeat("s", 1000))
	assert.LessOrEqual(t, len(dev.Result.Handoff), MaxStoredHandoffBytes)
	assert.True(t, json.Valid(dev.Result.Handoff))
	assert.LessOrEqual(t, len(dev.Result.Summary[0]), MaxSummaryLineBytes)
	qa := h.report("A", StatusFail, "", strings.Repeat("f", 400), strings.Repeat("g", 400), strings.Repeat("h", 400))
	require.Equal(t, RoleQA, qa.Role)
	next := h.inFlight("A")
	assert.LessOrEqual(t, len(next.Feedback), MaxFeedbackBytes)

	crit := `{"criteria":[{"criterion":"it works","met":true,"evidence":"` + strings.Repeat("e", 9000) + `"}]}`
	h3 := newHarness(t, DefaultConfig())
	h3.plan(pg("A", 1))
	h3.through("A", StatusReadyForQA, StatusPass, StatusApproved, StatusMergeSuccess)
	bz := h3.report(LeadGroup, StatusBazinga, crit)
	assert.JSONEq(t, crit, string(bz.Result.Handoff), "the validation step reads the pm's BAZINGA whole")
}

// TestSnapshotKeepsHandoffsOnlyWhereRead: a track's last step keeps its
// capsule, not its handoff; the step a pending or running step gets its
// handoff from keeps it.
func TestSnapshotKeepsHandoffsOnlyWhereRead(t *testing.T) {
	h := newHarness(t, DefaultConfig())
	h.plan(pg("A", 1), pg("B", 1))
	dev := h.report("A", StatusReadyForQA, `{"files_changed":["a.go"]}`, "done")
	qa := h.inFlight("A")
	require.Equal(t, dev.ID, qa.From)
	h.report("B", StatusReadyForQA, `{"files_changed":["b.go"]}`, "done")
	h.report("B", StatusPass, `{"tests":{"total":1}}`, "pass")

	snap := h.s.Snapshot(0)
	assert.JSONEq(t, `{"files_changed":["a.go"]}`, string(snap.Step(dev.ID).Result.Handoff), "A's QA reads it")
	bLast := snap.Step(snap.Group("B").Last)
	require.NotNil(t, bLast)
	tl := snap.Step(snap.Group("B").InFlight)
	require.NotNil(t, tl)
	assert.Equal(t, bLast.ID, tl.From, "B's review reads QA's handoff")
	assert.NotEmpty(t, bLast.Result.Handoff)

	lean := h.s.Lean(10)
	assert.LessOrEqual(t, len(lean.Step(dev.ID).Result.Handoff), 40, "cut to the limit, still JSON")
	assert.True(t, json.Valid(lean.Step(dev.ID).Result.Handoff))
	assert.Equal(t, []string{"done"}, lean.Step(dev.ID).Result.Summary, "a read step keeps its summary")
	r1, r2 := routingKey(h.s), routingKey(lean)
	assert.Equal(t, r1, r2, "the lean session routes as the full one")
}

func routingKey(s Session) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d %s|", s.Status, s.StepSeq, s.Lead.InFlight)
	for _, g := range s.Groups {
		fmt.Fprintf(&b, "%s %s %s %s|", g.ID, g.Stage, g.InFlight, g.Last)
	}
	return b.String()
}

// TestReviewBodyBounded: a person's review text enters as feedback of at
// most MaxFeedbackBytes, and bounding is idempotent, so a front-end that
// records it bounded rebuilds the same session.
func TestReviewBodyBounded(t *testing.T) {
	body := "rename Foo. " + strings.Repeat("x", 60000) + " THE END"
	b := BoundReviewBody(body)
	assert.LessOrEqual(t, len(b), MaxFeedbackBytes)
	assert.Equal(t, b, BoundReviewBody(b), "idempotent")
	assert.True(t, strings.HasPrefix(b, "rename Foo."))
	assert.True(t, strings.HasSuffix(b, "THE END"))

	run := func(body string) Step {
		cfg := DefaultConfig()
		cfg.Merge.RequiredApprovals = 1
		h := newHarness(t, cfg)
		h.plan(pg("A", 1))
		h.through("A", StatusReadyForReview, StatusApproved)
		h.reconcile(Event{Kind: EventHumanReview, Session: "s1", Group: "A", Actor: "alice", Review: ReviewChangesRequested, Body: body})
		return h.inFlight("A")
	}
	live, replayed := run(body), run(b)
	assert.LessOrEqual(t, len(live.Feedback), MaxFeedbackBytes)
	assert.Contains(t, live.Feedback, "Changes requested by alice: rename Foo.")
	assert.Equal(t, live.Feedback, replayed.Feedback, "the recorded, bounded body decides the same")
}
