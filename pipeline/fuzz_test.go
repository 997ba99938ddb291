package pipeline

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// FuzzReconcile feeds arbitrary event sequences to Reconcile: it must not
// panic and the liveness invariant must hold after every call. The input
// bytes are a little program: each op picks an event and its parameters.
func FuzzReconcile(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{2, 0, 0, 2, 1, 7, 2, 2, 13, 2, 3, 16, 2, 4, 27})
	f.Add([]byte("the quick brown fox jumps over the lazy dog"))
	f.Add([]byte{9, 9, 9, 1, 1, 1, 200, 201, 202, 255, 0, 128})
	f.Fuzz(runProgram)
}

func runProgram(t *testing.T, program []byte) {
	{
		cfg := DefaultConfig()
		if len(program) > 0 {
			cfg.MaxParallel = 1 + int(program[0]%4)
			cfg.QA = program[0]&8 == 0
			cfg.Merge.RequiredApprovals = int(program[0]>>4) % 2
			// Cost limits (issue 13): none, $1 or $2 a session; $2 a step.
			cfg.Limits.SessionCostUSD = float64(program[0] % 3)
			if program[0]&4 != 0 {
				cfg.Limits.StepCostUSD = 2
			}
			if program[0]&32 != 0 {
				cfg.Checkpoints = append(cfg.Checkpoints, CheckpointPlan)
			}
			if program[0]&64 != 0 {
				cfg.Checkpoints = append(cfg.Checkpoints, CheckpointPhase)
			}
		}
		s := Session{}
		now := t0
		next := func(i *int) byte {
			if *i >= len(program) {
				return 0
			}
			b := program[*i]
			*i++
			return b
		}
		step := func(evs []Event) {
			s2, acts := Reconcile(s, evs, now, cfg)
			if err := checkTransition(transition{before: s, events: evs, now: now, cfg: cfg, after: s2, acts: acts}); err != nil {
				var cmds []string
				for _, ev := range evs {
					if ev.Command != nil {
						cmds = append(cmds, fmt.Sprintf("%+v", *ev.Command))
					}
				}
				var before, after []string
				for _, g := range s.Groups {
					before = append(before, g.ID+":"+g.Stage.String())
				}
				for _, g := range s2.Groups {
					after = append(after, g.ID+":"+g.Stage.String())
				}
				t.Fatalf("promise broken: %v\nevents: %+v\ncommands: %v\ngroups before %v, after %v (status %s → %s)",
					err, evs, cmds, before, after, s.Status, s2.Status)
			}
			s = s2
		}
		step([]Event{Started("fz", "requirements", "main")})
		for i := 0; i < len(program); {
			op := next(&i)
			var evs []Event
			for k := 0; k <= int(op>>6); k++ { // up to 4 events per reconcile
				evs = append(evs, fuzzEvent(s, op, next(&i), next(&i)))
			}
			now = now.Add(time.Duration(next(&i)) * time.Minute * 3)
			step(evs)
			b, err := s.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := UnmarshalSession(b); err != nil {
				t.Fatalf("session does not read back: %v", err)
			}
		}
	}
}

var fuzzPlans = []string{
	`{"plan":{"groups":[{"id":"A","task":"a"},{"id":"B","task":"b","phase":2,"depends_on":["A"]}]}}`,
	`{"plan":{"mode":"simple","groups":[{"id":"A","task":"a","type":"research"}]}}`,
	`{"groups":[{"id":"A","task":"a","tier":"senior"},{"id":"B","task":"b"},{"id":"C","task":"c","depends_on":["B"]}]}`,
	`{"plan":{"groups":[{"id":"A","task":"a","depends_on":["A"]}]}}`,
	`{"groups":["A","B",{"id":"Z","task":"z"}],"feedback":{"A":"x"}}`,
	`{"question":"q?","fallback":"f"}`,
	// Malformed pm decisions (issue 23): a typo, repeats, an unknown drop,
	// only a new group, a drop by name.
	`{"groups":["a","A","A"],"drop":["Q"],"feedback":{"b":"x"}}`,
	`{"groups":[{"id":"Z","task":"z"}]}`,
	`{"drop":["A","B"]}`,
	`not json`,
	``,
}

func fuzzEvent(s Session, op, a, b byte) Event {
	inflight := s.InFlight()
	pickStep := func() string {
		if len(inflight) == 0 || a == 255 {
			return fmt.Sprintf("fz/A/developer/%d", a)
		}
		return inflight[int(a)%len(inflight)].ID
	}
	group := "A"
	if len(s.Groups) > 0 {
		group = s.Groups[int(b)%len(s.Groups)].ID
	}
	switch op % 8 {
	case 0, 1, 2:
		st := allStatuses()
		status := st[int(b)%len(st)]
		handoff := fuzzPlans[int(a^b)%len(fuzzPlans)]
		r := Result{Status: status, Summary: []string{"x"}}
		if handoff != "" && json.Valid([]byte(handoff)) {
			r.Handoff = json.RawMessage(handoff)
		}
		ev := StepResult(s.ID, pickStep(), r)
		ev.Usage = fuzzUsage(a, b)
		return ev
	case 3:
		ev := StepFailure(s.ID, pickStep(), "crash")
		ev.Permanent = b%5 == 0 // credentials refused: pauses at once
		ev.Usage = fuzzUsage(a, b)
		return ev
	case 4:
		kinds := []CommandKind{CommandResume, CommandStop, CommandRetry, CommandAnswer, CommandPause, CommandKind("invalid(9)"), CommandApprove}
		c := Command{Kind: kinds[int(a)%len(kinds)], Text: "t"}
		if b%2 == 0 {
			c.Group = group
		}
		c.Restart = c.Kind == CommandResume && b%7 == 3 // a local runner restarted
		switch {
		case b%3 == 1 && s.Checkpoint != nil:
			c.Checkpoint = s.Checkpoint.ID
		case b%3 == 2:
			c.Checkpoint = "plan-1"
		}
		return CommandEvent(s.ID, "u", c)
	case 5:
		return Event{Kind: EventHumanReview, Session: s.ID, Group: group, Actor: fmt.Sprintf("u%d", a%3), Review: reviewStateEnum.values[b%4]}
	case 6:
		return Event{Kind: EventPRClosed, Session: s.ID, Group: group, Merged: a%3 == 0}
	default:
		if a%7 == 0 {
			kind := EventKind(fmt.Sprintf("invalid(%d)", b))
			if int(b) < len(eventKindEnum.values) {
				kind = eventKindEnum.values[b]
			}
			return Event{Kind: kind, Session: "other"}
		}
		if a%7 == 1 {
			// A human pushes to a group branch (issue 28).
			return Pushed(s.ID, group, fmt.Sprintf("push%d", b%4), "u")
		}
		return Tick(s.ID)
	}
}

// fuzzUsage is a step's reported usage: none, tokens only, priced (up to
// $5.10, over the step limit), or malformed (refused by the engine).
func fuzzUsage(a, b byte) *Usage {
	if b%3 == 0 {
		return nil
	}
	u := &Usage{Steps: 1, Priced: int(a % 2), InputTokens: int64(a) * 100, OutputTokens: int64(b)}
	if u.Priced == 1 {
		u.CostMicros = int64(a) * 20_000
	}
	if a == 254 {
		u.InputTokens = -1
	}
	return u
}
