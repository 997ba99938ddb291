package bot

import (
	"fmt"
	"strings"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// stageColours are the fill colours of the plan graph's nodes, by stage, in
// the stage order: one Mermaid class per stage.
var stageColours = []struct {
	stage pipeline.Stage
	fill  string
}{
	{pipeline.StagePending, "#eeeeee"},
	{pipeline.StageDev, "#cfe2ff"},
	{pipeline.StageQA, "#e2d9f3"},
	{pipeline.StageReview, "#fff3cd"},
	{pipeline.StageInvestigation, "#ffe5d0"},
	{pipeline.StageApproved, "#d1e7dd"},
	{pipeline.StageMerging, "#a3cfbb"},
	{pipeline.StageMerged, "#75b798"},
	{pipeline.StageBlocked, "#f8d7da"},
	{pipeline.StageAbandoned, "#adb5bd"},
}

// planGraph is the plan as a Mermaid flowchart (GitHub renders it): the
// groups by phase, their dependencies as arrows, each node coloured by its
// stage. Group names are agent text: only plain characters reach the graph.
func planGraph(s pipeline.Session) string {
	if len(s.Groups) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("```mermaid\nflowchart LR\n")
	phases := []int{}
	byPhase := map[int][]pipeline.Group{}
	for _, g := range s.Groups {
		if _, ok := byPhase[g.Phase]; !ok {
			phases = append(phases, g.Phase)
		}
		byPhase[g.Phase] = append(byPhase[g.Phase], g)
	}
	for _, p := range phases { // plan order, which is phase order
		fmt.Fprintf(&b, "  subgraph phase%d[\"Phase %d\"]\n", p, p)
		for _, g := range byPhase[p] {
			fmt.Fprintf(&b, "    g_%s[\"%s: %s<br/>%s\"]:::%s\n", nodeID(g.ID), g.ID, graphText(g.Name), g.Stage, g.Stage)
		}
		b.WriteString("  end\n")
	}
	for _, g := range s.Groups {
		for _, d := range g.DependsOn {
			fmt.Fprintf(&b, "  g_%s --> g_%s\n", nodeID(d), nodeID(g.ID))
		}
	}
	used := map[pipeline.Stage]bool{}
	for _, g := range s.Groups {
		used[g.Stage] = true
	}
	for _, c := range stageColours {
		if used[c.stage] {
			fmt.Fprintf(&b, "  classDef %s fill:%s,stroke:#555\n", c.stage, c.fill)
		}
	}
	b.WriteString("```\n")
	return b.String()
}

// nodeID makes a group id a Mermaid node id (ids are [A-Za-z0-9_-]).
func nodeID(id string) string { return strings.ReplaceAll(id, "-", "_") }

// graphText keeps letters, digits, spaces and plain punctuation of agent
// text, at most 40 characters: nothing that Mermaid or HTML would read.
func graphText(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range strings.Join(strings.Fields(s), " ") {
		if n == 40 {
			b.WriteString("…")
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune(" .,:;/()_+-", r):
			b.WriteRune(r)
		case r > 127 && r != '\u2028' && r != '\u2029':
			b.WriteRune(r) // letters of other scripts
		default:
			continue
		}
		n++
	}
	return b.String()
}
