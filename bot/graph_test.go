package bot

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bazinga-bot/bazinga/pipeline"
)

func TestPlanGraph(t *testing.T) {
	s := pipeline.Session{Groups: []pipeline.Group{
		{ID: "A", Name: "Parser", Phase: 1, Track: pipeline.Track{Stage: pipeline.StageMerged}},
		{ID: "b-2", Name: `Lexer"]; click A call evil() <img src=x>`, Phase: 1, Track: pipeline.Track{Stage: pipeline.StageReview}},
		{ID: "C", Name: "Glue", Phase: 2, DependsOn: []string{"A", "b-2"}, Track: pipeline.Track{Stage: pipeline.StagePending}},
	}}
	g := planGraph(s)
	assert.True(t, strings.HasPrefix(g, "```mermaid\nflowchart LR\n"))
	assert.Contains(t, g, `subgraph phase1["Phase 1"]`)
	assert.Contains(t, g, `subgraph phase2["Phase 2"]`)
	assert.Contains(t, g, `g_A["A: Parser<br/>merged"]:::merged`)
	assert.Contains(t, g, "g_A --> g_C\n")
	assert.Contains(t, g, "g_b_2 --> g_C\n")
	assert.Contains(t, g, "classDef review fill:")
	assert.NotContains(t, g, "classDef qa", "only the stages in use")
	line := g[strings.Index(g, "g_b_2["):]
	line = line[:strings.Index(line, "\n")]
	assert.Equal(t, `g_b_2["b-2: Lexer; click A call evil() img srcx<br/>review"]:::review`, line,
		"agent text cannot close the label, add directives or HTML")
	assert.Empty(t, planGraph(pipeline.Session{}), "no plan, no graph")
}
