package bot

import (
	"fmt"
	"strings"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// Checkpoints in the tracking comment (issue 13): what waits for approval,
// how to approve it or send it back, and at the plan checkpoint the plan
// itself (groups, phases, dependencies, tasks, success criteria), so a
// reviewer approves what they read. The Mermaid graph of the plan follows
// the group table as always.

// renderCheckpoint is the block of the open checkpoint, or "".
func renderCheckpoint(s pipeline.Session) string {
	cp := s.Checkpoint
	if cp == nil {
		return ""
	}
	var b strings.Builder
	since := cp.Since.UTC().Format("2006-01-02 15:04 UTC")
	if cp.Kind == pipeline.CheckpointFindings {
		fmt.Fprintf(&b, "\n> ✋ **Waiting for a decision: %s** (since %s) | a HIGH review finding of group %s survived its revision (step `%s`).\n"+
			"> Reply `/bazinga approve` to accept the findings and go on, or `/bazinga answer <direction>` to send the group back with it.\n",
			cp.ID, since, cp.Group, codec.EscapeHTML(cp.Step))
		return b.String()
	}
	if cp.Kind != pipeline.CheckpointPlan {
		var ids []string
		for _, g := range s.Groups {
			if cp.Holds(&g) {
				ids = append(ids, g.ID)
			}
		}
		fmt.Fprintf(&b, "\n> ✋ **Waiting for approval: %s** (since %s) | phase %d (%s) starts once a writer approves.\n"+
			"> Reply `/bazinga approve`; `/bazinga answer <feedback>` tells the pm first.\n", cp.ID, since, cp.Phase, strings.Join(ids, ", "))
		return b.String()
	}
	fmt.Fprintf(&b, "\n> ✋ **Waiting for approval: %s** (since %s) | no developer starts until a writer approves the plan below.\n"+
		"> Reply `/bazinga approve` to start the work, or `/bazinga answer <feedback>` to send the plan back to the pm.\n", cp.ID, since)
	for _, p := range s.PassedCheckpoints {
		if p.Kind == pipeline.CheckpointPlan && p.RevisedBy != "" {
			fmt.Fprintf(&b, "> %s was sent back by %s: %s\n", p.ID, codec.OneLine(p.RevisedBy), codec.OneLine(p.Feedback))
		}
	}
	fmt.Fprintf(&b, "\n#### The plan (%s, %s mode)\n\n| Group | Phase | Kind | Depends on | Task |\n|---|---|---|---|---|\n", cp.ID, s.Mode)
	for _, g := range s.Groups {
		deps := strings.Join(g.DependsOn, ", ")
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |\n", cell(g.ID+": "+g.Name), g.Phase, cell(g.Type.String()+", "+g.Tier.String()), cell(deps), cell(shownTask(g)))
	}
	if len(s.SuccessCriteria) > 0 {
		b.WriteString("\n**Success criteria**\n\n")
		for _, c := range s.SuccessCriteria {
			b.WriteString("- " + codec.OneLine(c) + "\n")
		}
	}
	return b.String()
}
