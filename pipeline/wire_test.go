package pipeline

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The wire format: what the engine's types look like in the signed state of
// a tracking comment, in a local session's events.jsonl and state file, and
// in result comments. Sessions written by one version are read by the next,
// so every enum's name, every field's presence and every zero value is a
// contract. The golden files in testdata/wire were captured from the
// engine's encoding and must not change when the code behind them does; run
// with -update only when the format is meant to change (then old states
// must still load: see TestWireLegacyInputs).

var updateWire = flag.Bool("update", false, "rewrite the golden files in testdata/wire")

func wireGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "wire", name)
	if *updateWire {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file (run with -update to create it)")
	require.Equal(t, string(want), string(got), "the wire format changed: %s", path)
}

type enumValue struct {
	name string // the Go constant
	v    any
}

func ev(name string, v any) enumValue { return enumValue{name, v} }

// wireEnums lists every value of every enum the engine writes, under its
// constant's name (Route is not written, but its names are shown to people).
var wireEnums = [][]enumValue{
	{ev("RoleUnknown", RoleUnknown), ev("RolePM", RolePM), ev("RoleDeveloper", RoleDeveloper), ev("RoleSenior", RoleSenior),
		ev("RoleQA", RoleQA), ev("RoleTechLead", RoleTechLead), ev("RoleInvestigator", RoleInvestigator),
		ev("RoleRequirements", RoleRequirements), ev("RoleMerge", RoleMerge), ev("RoleValidate", RoleValidate)},
	{ev("StatusUnknown", StatusUnknown), ev("StatusPlanningComplete", StatusPlanningComplete), ev("StatusContinue", StatusContinue),
		ev("StatusBazinga", StatusBazinga), ev("StatusNeedsClarification", StatusNeedsClarification),
		ev("StatusInvestigationNeeded", StatusInvestigationNeeded), ev("StatusInvestigationOnly", StatusInvestigationOnly),
		ev("StatusReadyForQA", StatusReadyForQA), ev("StatusReadyForReview", StatusReadyForReview), ev("StatusPartial", StatusPartial),
		ev("StatusBlocked", StatusBlocked), ev("StatusEscalateSenior", StatusEscalateSenior),
		ev("StatusSpawnInvestigator", StatusSpawnInvestigator), ev("StatusPass", StatusPass), ev("StatusFail", StatusFail),
		ev("StatusFlaky", StatusFlaky), ev("StatusApproved", StatusApproved), ev("StatusApprovedWithNotes", StatusApprovedWithNotes),
		ev("StatusChangesRequested", StatusChangesRequested), ev("StatusEscalateToOpus", StatusEscalateToOpus),
		ev("StatusUnblockingGuidance", StatusUnblockingGuidance), ev("StatusRootCauseFound", StatusRootCauseFound),
		ev("StatusInvestigationIncomplete", StatusInvestigationIncomplete), ev("StatusExhausted", StatusExhausted),
		ev("StatusNeedDeveloperDiagnostic", StatusNeedDeveloperDiagnostic), ev("StatusHypothesisEliminated", StatusHypothesisEliminated),
		ev("StatusNeedMoreAnalysis", StatusNeedMoreAnalysis), ev("StatusMergeSuccess", StatusMergeSuccess),
		ev("StatusMergeConflict", StatusMergeConflict), ev("StatusMergeTestFailure", StatusMergeTestFailure),
		ev("StatusMergeBlocked", StatusMergeBlocked), ev("StatusMergeUpdated", StatusMergeUpdated),
		ev("StatusMergeHeadMoved", StatusMergeHeadMoved), ev("StatusAccept", StatusAccept), ev("StatusReject", StatusReject),
		ev("StatusIncomplete", StatusIncomplete), ev("StatusWaitingForResults", StatusWaitingForResults),
		ev("StatusUnblockingGuidanceProvided", StatusUnblockingGuidanceProvided), ev("StatusFailEscalate", StatusFailEscalate)},
	{ev("SessionNew", SessionNew), ev("SessionPlanning", SessionPlanning), ev("SessionRunning", SessionRunning),
		ev("SessionAwaitingInput", SessionAwaitingInput), ev("SessionPaused", SessionPaused), ev("SessionValidating", SessionValidating),
		ev("SessionDone", SessionDone), ev("SessionFailed", SessionFailed), ev("SessionStopped", SessionStopped)},
	{ev("StagePending", StagePending), ev("StageDev", StageDev), ev("StageQA", StageQA), ev("StageReview", StageReview),
		ev("StageInvestigation", StageInvestigation), ev("StageApproved", StageApproved), ev("StageMerging", StageMerging),
		ev("StageMerged", StageMerged), ev("StageBlocked", StageBlocked), ev("StageAbandoned", StageAbandoned)},
	{ev("GroupImplementation", GroupImplementation), ev("GroupResearch", GroupResearch)},
	{ev("TierDeveloper", TierDeveloper), ev("TierSenior", TierSenior)},
	{ev("ModeSimple", ModeSimple), ev("ModeParallel", ModeParallel)},
	{ev("WaitNone", WaitNone), ev("WaitPhase", WaitPhase), ev("WaitDependencies", WaitDependencies), ev("WaitCap", WaitCap),
		ev("WaitMergeLane", WaitMergeLane), ev("WaitHumanReview", WaitHumanReview), ev("WaitClarification", WaitClarification),
		ev("WaitPM", WaitPM), ev("WaitPaused", WaitPaused), ev("WaitEnded", WaitEnded), ev("WaitGroups", WaitGroups),
		ev("WaitCheckpoint", WaitCheckpoint), ev("WaitChecks", WaitChecks), ev("WaitBranch", WaitBranch)},
	{ev("PurposeNone", PurposeNone), ev("PurposePlan", PurposePlan), ev("PurposeCoordinate", PurposeCoordinate),
		ev("PurposeAnswered", PurposeAnswered), ev("PurposeFinalCheck", PurposeFinalCheck), ev("PurposeImplement", PurposeImplement),
		ev("PurposeRevise", PurposeRevise), ev("PurposeFixQA", PurposeFixQA), ev("PurposeFixReview", PurposeFixReview),
		ev("PurposeFixMerge", PurposeFixMerge), ev("PurposeApplyGuidance", PurposeApplyGuidance), ev("PurposeDiagnostic", PurposeDiagnostic),
		ev("PurposeTest", PurposeTest), ev("PurposeReview", PurposeReview), ev("PurposeGuidance", PurposeGuidance),
		ev("PurposeValidateFindings", PurposeValidateFindings), ev("PurposeInvestigate", PurposeInvestigate),
		ev("PurposeMerge", PurposeMerge), ev("PurposeValidate", PurposeValidate)},
	{ev("StepInFlight", StepInFlight), ev("StepDone", StepDone), ev("StepFailed", StepFailed), ev("StepCancelled", StepCancelled)},
	{ev("EventUnknown", EventUnknown), ev("EventStarted", EventStarted), ev("EventStepResult", EventStepResult),
		ev("EventStepFailed", EventStepFailed), ev("EventCommand", EventCommand), ev("EventHumanReview", EventHumanReview),
		ev("EventPRClosed", EventPRClosed), ev("EventTick", EventTick), ev("EventChecks", EventChecks), ev("EventPushed", EventPushed),
		ev("EventBranchDeleted", EventBranchDeleted), ev("EventPRReopened", EventPRReopened), ev("EventBaseRenamed", EventBaseRenamed),
		ev("EventHeld", EventHeld)},
	{ev("CommandUnknown", CommandUnknown), ev("CommandResume", CommandResume), ev("CommandStop", CommandStop),
		ev("CommandRetry", CommandRetry), ev("CommandAnswer", CommandAnswer), ev("CommandPause", CommandPause),
		ev("CommandApprove", CommandApprove)},
	{ev("ReviewCommented", ReviewCommented), ev("ReviewApproved", ReviewApproved), ev("ReviewChangesRequested", ReviewChangesRequested),
		ev("ReviewDismissed", ReviewDismissed)},
	{ev("ActionUnknown", ActionUnknown), ev("ActionDispatch", ActionDispatch), ev("ActionCancel", ActionCancel),
		ev("ActionNotify", ActionNotify), ev("ActionPause", ActionPause), ev("ActionComplete", ActionComplete), ev("ActionReport", ActionReport)},
	{ev("NoticeNone", NoticeNone), ev("NoticeQuestion", NoticeQuestion), ev("NoticeAnswers", NoticeAnswers),
		ev("NoticeSummary", NoticeSummary), ev("NoticeInfo", NoticeInfo), ev("NoticeCheckpoint", NoticeCheckpoint)},
	{ev("CheckpointNone", CheckpointNone), ev("CheckpointPlan", CheckpointPlan), ev("CheckpointPhase", CheckpointPhase),
		ev("CheckpointFindings", CheckpointFindings)},
	{ev("ChecksUnknown", ChecksUnknown), ev("ChecksPending", ChecksPending), ev("ChecksPassed", ChecksPassed), ev("ChecksFailed", ChecksFailed)},
	{ev("SeverityNone", SeverityNone), ev("SeverityLow", SeverityLow), ev("SeverityMedium", SeverityMedium), ev("SeverityHigh", SeverityHigh)},
	{ev("SizeUnknown", SizeUnknown), ev("SizeS", SizeS), ev("SizeM", SizeM), ev("SizeL", SizeL), ev("SizeXL", SizeXL)},
	{ev("IdentityExitStatus", IdentityExitStatus), ev("IdentityGoTestJSON", IdentityGoTestJSON), ev("IdentityJUnit", IdentityJUnit)},
	{ev("RouteNone", RouteNone), ev("RoutePlan", RoutePlan), ev("RouteContinue", RouteContinue), ev("RouteValidate", RouteValidate),
		ev("RouteClarify", RouteClarify), ev("RouteSessionInvestigation", RouteSessionInvestigation), ev("RouteAnswersOnly", RouteAnswersOnly),
		ev("RoutePMAgain", RoutePMAgain), ev("RouteToQA", RouteToQA), ev("RouteToReview", RouteToReview),
		ev("RouteDeveloperRevision", RouteDeveloperRevision), ev("RouteSeniorRevision", RouteSeniorRevision),
		ev("RouteInvestigate", RouteInvestigate), ev("RouteGuidance", RouteGuidance), ev("RouteSenior", RouteSenior),
		ev("RouteQAFailed", RouteQAFailed), ev("RouteQAInconclusive", RouteQAInconclusive), ev("RouteApproved", RouteApproved),
		ev("RouteGuidanceApproved", RouteGuidanceApproved), ev("RouteChangesRequested", RouteChangesRequested),
		ev("RouteEscalateModel", RouteEscalateModel), ev("RouteUnblock", RouteUnblock), ev("RouteTechLeadAgain", RouteTechLeadAgain),
		ev("RouteValidateFindings", RouteValidateFindings), ev("RouteDiagnostic", RouteDiagnostic),
		ev("RouteDiagnosticDone", RouteDiagnosticDone), ev("RouteInvestigateAgain", RouteInvestigateAgain),
		ev("RouteRequirementsAgain", RouteRequirementsAgain), ev("RouteMerged", RouteMerged), ev("RouteMergeFailed", RouteMergeFailed),
		ev("RouteMergeBlocked", RouteMergeBlocked), ev("RouteStepRetry", RouteStepRetry), ev("RouteDone", RouteDone),
		ev("RouteRejected", RouteRejected), ev("RouteMergeAgain", RouteMergeAgain), ev("RouteHeadMoved", RouteHeadMoved),
		ev("RouteHighFinding", RouteHighFinding), ev("RouteFindingsNoted", RouteFindingsNoted)},
}

// TestWireGoldenEnums records, for every value of every enum, its name for
// people (String) and on the wire (JSON), reads the JSON back to the same
// value, and records what an unknown name is refused with.
func TestWireGoldenEnums(t *testing.T) {
	var out bytes.Buffer
	for _, values := range wireEnums {
		typ := reflect.TypeOf(values[0].v)
		fmt.Fprintf(&out, "# %s\n", typ.Name())
		seen := map[any]string{}
		for _, e := range values {
			require.Equal(t, typ, reflect.TypeOf(e.v), e.name)
			if other, dup := seen[e.v]; dup {
				t.Fatalf("%s and %s are the same value", other, e.name)
			}
			seen[e.v] = e.name
			s := fmt.Sprint(e.v)
			if _, ok := e.v.(encoding.TextMarshaler); !ok {
				fmt.Fprintf(&out, "%s\t%q\n", e.name, s)
				continue
			}
			b, err := json.Marshal(e.v)
			require.NoError(t, err, e.name)
			fmt.Fprintf(&out, "%s\t%q\t%s\n", e.name, s, b)
			back := reflect.New(typ)
			require.NoError(t, json.Unmarshal(b, back.Interface()), "%s: %s", e.name, b)
			require.Equal(t, e.v, back.Elem().Interface(), "%s does not read back from %s", e.name, b)
		}
		if _, ok := values[0].v.(encoding.TextMarshaler); ok {
			err := json.Unmarshal([]byte(`"no_such_name"`), reflect.New(typ).Interface())
			require.Error(t, err, typ.Name())
			fmt.Fprintf(&out, "unknown\t%v\n", err)
		}
	}
	wireGolden(t, "enums.txt", out.Bytes())
}

// wireStructs is one value of each type the engine writes, built to carry
// every enum value in the fields where it is stored, next to the zero value
// of each type (the zero enums and omitted fields).
func wireStructs() []any {
	at := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	var out []any
	for _, v := range []any{Session{}, Group{}, Track{}, StepSpec{}, Step{}, Event{}, Command{}, Action{}, Result{},
		Finding{}, ChecksReport{}, GroupChecks{}, Checkpoint{}, Clarification{}, Baseline{}, FindingHold{}, Config{}} {
		out = append(out, v)
	}
	var roles []Role
	for _, e := range wireEnums[0] {
		roles = append(roles, e.v.(Role))
	}
	for i, e := range wireEnums[1] { // every status, as a result and as reported
		st := Step{ID: fmt.Sprintf("s/A/qa/%d", i), Group: "A", N: i, StepSpec: StepSpec{Role: roles[i%len(roles)]},
			State: StepDone, DispatchedAt: at, Result: &Result{Status: e.v.(Status)}, Reported: e.v.(Status)}
		out = append(out, st)
	}
	for i, e := range wireEnums[8] { // every purpose, in a spec and an action
		p := e.v.(Purpose)
		out = append(out, StepSpec{Role: roles[i%len(roles)], Purpose: p, Attempt: i},
			Action{ID: fmt.Sprint(i), Kind: ActionDispatch, Role: roles[(i+3)%len(roles)], Purpose: p})
	}
	for i, e := range wireEnums[9] {
		out = append(out, Step{ID: fmt.Sprint(i), StepSpec: StepSpec{Role: RoleDeveloper, Purpose: PurposeImplement}, State: e.v.(StepState)})
	}
	for i, e := range wireEnums[2] { // session statuses and modes
		s := e.v.(SessionStatus)
		out = append(out, Session{ID: "s", Mode: wireEnums[6][i%2].v.(Mode), Status: s, Groups: []Group{}, Steps: []Step{}},
			Clarification{Step: "s/lead/pm/1", Resume: s, AskedAt: at, Deadline: at},
			Action{ID: fmt.Sprint(i), Kind: ActionPause, Status: s})
	}
	for i, e := range wireEnums[3] { // stages, with types, tiers, sizes, waits and blocked roles
		g := Group{ID: fmt.Sprint(i), Type: wireEnums[4][i%2].v.(GroupType), Tier: wireEnums[5][(i/2)%2].v.(Tier),
			Size: wireEnums[18][i%5].v.(Size)}
		g.Stage = e.v.(Stage)
		g.Wait = wireEnums[7][i].v.(WaitReason)
		g.Blocked = roles[i]
		out = append(out, g)
	}
	for i, e := range wireEnums[7][len(wireEnums[3]):] {
		out = append(out, Track{Wait: e.v.(WaitReason), Blocked: roles[i]})
	}
	for _, e := range wireEnums[10] {
		out = append(out, Event{Kind: e.v.(EventKind), Session: "s"})
	}
	for _, e := range wireEnums[11] {
		out = append(out, Event{Kind: EventCommand, Session: "s", Command: &Command{Kind: e.v.(CommandKind), Group: "A"}})
	}
	for _, e := range wireEnums[12] {
		out = append(out, Event{Kind: EventHumanReview, Session: "s", Review: e.v.(ReviewState)})
	}
	for _, e := range wireEnums[13] {
		out = append(out, Action{ID: "a", Kind: e.v.(ActionKind)})
	}
	for _, e := range wireEnums[14] {
		out = append(out, Action{ID: "n", Kind: ActionNotify, Notice: e.v.(NoticeKind)})
	}
	var kinds []CheckpointKind
	for _, e := range wireEnums[15] {
		kinds = append(kinds, e.v.(CheckpointKind))
		out = append(out, Checkpoint{ID: "c", Kind: e.v.(CheckpointKind), Since: at})
	}
	out = append(out, Config{Checkpoints: kinds})
	for _, e := range wireEnums[16] {
		r := ChecksReport{State: e.v.(CheckState)}
		out = append(out, Event{Kind: EventChecks, Session: "s", Checks: &r}, GroupChecks{Head: "h", ChecksReport: r})
	}
	var findings []Finding
	for _, e := range wireEnums[17] {
		findings = append(findings, Finding{Severity: e.v.(Severity), Problem: "p"})
	}
	out = append(out, Result{Status: StatusPass, Findings: findings}, FollowUp{Group: "A", Step: "s", Finding: findings[2]})
	for i, e := range wireEnums[19] {
		out = append(out, Baseline{Commit: "c", Identity: e.v.(TestIdentity), Green: i == 0},
			FindingHold{Step: "s", Role: roles[i+4]})
	}
	return out
}

// TestWireGoldenStructs encodes every written type with every enum value
// where it is stored, and its zero value, against the golden file; each
// encoding reads back to the same value and encodes to the same bytes.
func TestWireGoldenStructs(t *testing.T) {
	var out bytes.Buffer
	for i, v := range wireStructs() {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		fmt.Fprintf(&out, "%s\t%s\n", reflect.TypeOf(v).Name(), b)
		back := reflect.New(reflect.TypeOf(v))
		require.NoError(t, json.Unmarshal(b, back.Interface()), "%d: %s", i, b)
		again, err := json.Marshal(back.Elem().Interface())
		require.NoError(t, err)
		require.Equal(t, string(b), string(again), "%d does not re-encode identically", i)
	}
	wireGolden(t, "structs.jsonl", out.Bytes())
}

// TestWireLegacyInputs reads encodings as earlier versions wrote them: an
// absent enum field or an empty name is the enum's zero value, whose name
// (pending, new, in_flight, ...) is what the engine always meant by it, and
// an unknown name is refused, naming the kind of value.
func TestWireLegacyInputs(t *testing.T) {
	var g Group
	require.NoError(t, json.Unmarshal([]byte(`{"id":"A"}`), &g))
	require.Equal(t, StagePending, g.Stage)
	require.Equal(t, GroupImplementation, g.Type)
	require.Equal(t, TierDeveloper, g.Tier)
	require.Equal(t, SizeUnknown, g.Size)
	require.Equal(t, WaitNone, g.Wait)
	require.Equal(t, RoleUnknown, g.Blocked)
	require.Equal(t, Group{}.Stage, g.Stage, "an absent stage is the zero Group's")
	for _, in := range []string{`{"stage":"pending","type":"implementation","tier":"developer","size":"","wait":"","blocked":""}`,
		`{"stage":"","type":"","tier":""}`} {
		var g2 Group
		require.NoError(t, json.Unmarshal([]byte(in), &g2), in)
		require.Equal(t, Group{}, g2, in)
	}
	var s Session
	require.NoError(t, json.Unmarshal([]byte(`{"id":"x"}`), &s))
	require.Equal(t, SessionNew, s.Status)
	require.Equal(t, ModeSimple, s.Mode)
	require.NoError(t, json.Unmarshal([]byte(`{"id":"x","status":"new","mode":"simple"}`), &s))
	require.Equal(t, SessionNew, s.Status)
	require.Equal(t, ModeSimple, s.Mode)
	var st Step
	require.NoError(t, json.Unmarshal([]byte(`{"id":"x","role":"qa","purpose":"test","state":"in_flight"}`), &st))
	require.Equal(t, StepInFlight, st.State)
	require.Equal(t, Step{}.State, st.State)
	var e Event
	require.NoError(t, json.Unmarshal([]byte(`{"kind":"human_review","session":"s"}`), &e))
	require.Equal(t, ReviewCommented, e.Review, "an absent review is a comment")
	require.NoError(t, json.Unmarshal([]byte(`{"kind":"human_review","session":"s","review":"commented"}`), &e))
	require.Equal(t, ReviewCommented, e.Review)
	var a Action
	require.NoError(t, json.Unmarshal([]byte(`{"id":"x","kind":"pause"}`), &a))
	require.Equal(t, SessionNew, a.Status)
	var b Baseline
	require.NoError(t, json.Unmarshal([]byte(`{"commit":"c","identity":"exit status"}`), &b))
	require.Equal(t, IdentityExitStatus, b.Identity)
	require.Equal(t, Baseline{}.Identity, b.Identity)
	var cl Clarification
	require.NoError(t, json.Unmarshal([]byte(`{"step":"s","resume":"running"}`), &cl))
	require.Equal(t, SessionRunning, cl.Resume)

	refused := []struct{ in, want string }{
		{`{"stage":"bogus"}`, `unknown stage "bogus"`},
		{`{"type":"other"}`, `unknown group type "other"`},
		{`{"tier":"junior"}`, `unknown tier "junior"`},
		{`{"size":"XXL"}`, `unknown size "XXL"`},
		{`{"wait":"x"}`, `unknown wait reason "x"`},
		{`{"blocked":"boss"}`, `unknown role "boss"`},
	}
	for _, r := range refused {
		var g Group
		err := json.Unmarshal([]byte(r.in), &g)
		require.ErrorContains(t, err, r.want, r.in)
	}
	require.ErrorContains(t, json.Unmarshal([]byte(`{"status":"later"}`), &s), `unknown session status "later"`)
	require.ErrorContains(t, json.Unmarshal([]byte(`{"state":"gone"}`), &st), `unknown step state "gone"`)
	require.ErrorContains(t, json.Unmarshal([]byte(`{"review":"liked"}`), &e), `unknown review state "liked"`)
	require.ErrorContains(t, json.Unmarshal([]byte(`{"identity":"tap"}`), &b), `unknown test identity "tap"`)
}

// TestWireGoldenSimulated plays simulated sessions (every route, stage and
// wait the simulator reaches) and records a digest of every reconcile's
// events, session and actions as JSON: a change to how any of them encodes,
// or to what the engine decides, changes a digest. Each encoding also reads
// back and re-encodes to the same bytes.
func TestWireGoldenSimulated(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	var out bytes.Buffer
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		var trace bytes.Buffer
		sim := newSimulator(seed)
		sim.wire = &trace
		sim.play(t, seed)
		sc := bufio.NewScanner(bytes.NewReader(trace.Bytes()))
		sc.Buffer(nil, 64<<20)
		lines := 0
		for ; sc.Scan(); lines++ {
			var v any
			switch lines % 3 {
			case 0:
				v = &[]Event{}
			case 1:
				v = &Session{}
			case 2:
				v = &[]Action{}
			}
			line := sc.Bytes()
			if err := json.Unmarshal(line, v); err != nil {
				// The simulator forges events an agent could send (a
				// finding of no known severity): they are refused on reading.
				require.True(t, lines%3 == 0 && strings.Contains(err.Error(), "unknown "), "seed %d line %d: %v", seed, lines, err)
				continue
			}
			again, err := json.Marshal(v)
			require.NoError(t, err)
			if !bytes.Equal(line, again) {
				t.Fatalf("seed %d line %d does not re-encode identically:\n%s\n%s", seed, lines, line, again)
			}
		}
		require.NoError(t, sc.Err())
		fmt.Fprintf(&out, "seed %d\t%d lines\t%d bytes\tsha256 %x\tends %s\n", seed, lines, trace.Len(), sha256.Sum256(trace.Bytes()), sim.s.Status)
	}
	name := "simulated.txt"
	if testing.Short() {
		// -short plays the first seeds only: compare them with the golden file's first lines.
		want, err := os.ReadFile(filepath.Join("testdata", "wire", name))
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(want), out.String()), "the wire format changed:\n%s", out.String())
		return
	}
	wireGolden(t, name, out.Bytes())
}
