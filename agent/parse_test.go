package agent

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

func TestParseResult(t *testing.T) {
	const devResult = `{"status":"READY_FOR_QA","summary":["Implemented JWT auth","3 files","12/12 tests pass"],"handoff":{"files_changed":["jwt.go"],"tests":{"total":12,"passing":12,"failing":0},"concerns":[]}}`
	claudeWrap := func(text string) string {
		b, _ := json.Marshal(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": text, "session_id": "x"})
		return string(b)
	}
	tests := []struct {
		name        string
		role        pipeline.Role
		file        string
		stdout      string
		wantStatus  pipeline.Status
		wantSource  Source
		wantSummary []string
		wantHandoff string // compact JSON, "" for none
		wantNote    string // substring of some note
	}{
		{
			name: "result file", role: pipeline.RoleDeveloper, file: devResult, stdout: "noise",
			wantStatus: pipeline.StatusReadyForQA, wantSource: SourceFile,
			wantSummary: []string{"Implemented JWT auth", "3 files", "12/12 tests pass"},
			wantHandoff: `{"concerns":[],"files_changed":["jwt.go"],"tests":{"failing":0,"passing":12,"total":12}}`,
		},
		{
			name: "result file wins over stdout", role: pipeline.RoleQA,
			file: `{"status":"PASS","summary":"all good"}`, stdout: `{"status":"FAIL"}`,
			wantStatus: pipeline.StatusPass, wantSource: SourceFile, wantSummary: []string{"all good"},
		},
		{
			name: "result file with prose around the JSON", role: pipeline.RoleQA,
			file: "Here it is:\n```json\n{\"status\": \"FAIL\", \"summary\": [\"2 failing\"]}\n```\n", stdout: "",
			wantStatus: pipeline.StatusFail, wantSource: SourceFile, wantSummary: []string{"2 failing"}, wantNote: "not bare JSON",
		},
		{
			name: "invalid result file falls back to stdout", role: pipeline.RoleQA,
			file: `{"status": `, stdout: `{"status":"PASS","summary":["ok"]}`,
			wantStatus: pipeline.StatusPass, wantSource: SourceStdoutJSON, wantSummary: []string{"ok"}, wantNote: "result file has no JSON object",
		},
		{
			name: "last JSON object on stdout", role: pipeline.RoleQA,
			stdout:     "log {\"status\":\"FAIL\"}\nmore log\n{\"level\":\"info\"}\n{\"status\":\"PASS\",\"summary\":[\"ok\"]}\ntrailing text {not json}\n",
			wantStatus: pipeline.StatusPass, wantSource: SourceStdoutJSON, wantSummary: []string{"ok"},
		},
		{
			name: "pretty-printed JSON after prose with stray brace and quote", role: pipeline.RoleTechLead,
			stdout:     "I think { we should \"maybe\nrefactor.\n{\n  \"status\": \"APPROVED\",\n  \"summary\": [\"Reviewed\"],\n  \"handoff\": {\"required_changes\": [], \"suggestions\": [\"x\"], \"security_issues\": []}\n}\n",
			wantStatus: pipeline.StatusApproved, wantSource: SourceStdoutJSON, wantSummary: []string{"Reviewed"},
			wantHandoff: `{"required_changes":[],"security_issues":[],"suggestions":["x"]}`,
		},
		{
			name: "claude wrapper with fenced JSON in the result text", role: pipeline.RoleDeveloper,
			stdout:     claudeWrap("Done.\n\n```json\n" + devResult + "\n```\n"),
			wantStatus: pipeline.StatusReadyForQA, wantSource: SourceStdoutJSON, wantSummary: []string{"Implemented JWT auth", "3 files", "12/12 tests pass"},
			wantHandoff: `{"concerns":[],"files_changed":["jwt.go"],"tests":{"failing":0,"passing":12,"total":12}}`,
		},
		{
			name: "stream-json lines, the result event last", role: pipeline.RolePM,
			stdout: `{"type":"system","subtype":"init"}` + "\n" +
				`{"type":"assistant","message":{"content":[{"type":"text","text":"thinking about status"}]}}` + "\n" +
				claudeWrap(`{"status":"NEEDS_CLARIFICATION","summary":["Which DB?"],"handoff":{"question":"Postgres or MySQL?","options":["Postgres","MySQL"],"fallback":"Postgres"}}`) + "\n",
			wantStatus: pipeline.StatusNeedsClarification, wantSource: SourceStdoutJSON, wantSummary: []string{"Which DB?"},
			wantHandoff: `{"fallback":"Postgres","options":["Postgres","MySQL"],"question":"Postgres or MySQL?"}`,
		},
		{
			name: "claude wrapper with Status: lines in the text", role: pipeline.RoleQA,
			stdout:     claudeWrap("All done.\n**Status:** FAIL\nSummary: 2 tests fail\n"),
			wantStatus: pipeline.StatusFail, wantSource: SourceStatusLine, wantSummary: []string{"2 tests fail"},
		},
		{
			name: "known status preferred over an echoed template", role: pipeline.RoleQA,
			stdout:     `{"status":"PASS","summary":["ok"]}` + "\n" + `{"status":"ONE_OF_THE_STATUSES_BELOW"}`,
			wantStatus: pipeline.StatusPass, wantSource: SourceStdoutJSON, wantSummary: []string{"ok"},
		},
		{
			name: "status lines, last wins, summary lines", role: pipeline.RoleDeveloper,
			stdout:     "Status: PARTIAL\nworking...\nSummary: Implemented half\nSummary: Tests pending\n**Status:** READY_FOR_REVIEW\n",
			wantStatus: pipeline.StatusReadyForReview, wantSource: SourceStatusLine, wantSummary: []string{"Implemented half", "Tests pending"},
		},
		{
			name: "status line with lines after it", role: pipeline.RoleQA,
			stdout:     "## Status: pass - everything green\n- 12/12 tests\n- coverage 80%\n\nunrelated\n",
			wantStatus: pipeline.StatusPass, wantSource: SourceStatusLine, wantSummary: []string{"12/12 tests", "coverage 80%"},
		},
		{
			name: "summary header then lines", role: pipeline.RoleQA,
			stdout:     "Status: ready for qa\nSummary:\n- one\n- two\n- three\n- four\n",
			wantStatus: pipeline.StatusPartial, wantSource: SourceStatusLine, wantSummary: []string{"one", "two", "three"},
			wantNote: "READY_FOR_QA not allowed for qa",
		},
		{
			name: "alias normalised", role: pipeline.RoleDeveloper, file: `{"status":"INCOMPLETE"}`,
			wantStatus: pipeline.StatusPartial, wantSource: SourceFile, wantNote: "alias INCOMPLETE → PARTIAL",
		},
		{
			name: "alias for investigator", role: pipeline.RoleInvestigator, stdout: `{"status":"waiting_for_results"}`,
			wantStatus: pipeline.StatusNeedDeveloperDiagnostic, wantSource: SourceStdoutJSON, wantNote: "alias WAITING_FOR_RESULTS → NEED_DEVELOPER_DIAGNOSTIC",
		},
		{
			name: "disallowed status", role: pipeline.RoleQA, file: `{"status":"APPROVED"}`,
			wantStatus: pipeline.StatusPartial, wantSource: SourceFile, wantNote: "status APPROVED not allowed for qa, treated as PARTIAL",
		},
		{
			name: "unknown status", role: pipeline.RoleQA, file: `{"status":"FOO"}`,
			wantStatus: pipeline.StatusPartial, wantSource: SourceFile, wantNote: `unknown status "FOO"`,
		},
		{
			name: "nothing", role: pipeline.RoleQA, stdout: "I did some things but forgot the result.\n",
			wantStatus: pipeline.StatusPartial, wantSource: SourceMalformed, wantSummary: []string{MalformedSummary},
		},
		{
			name: "empty", role: pipeline.RolePM,
			wantStatus: pipeline.StatusPartial, wantSource: SourceMalformed, wantSummary: []string{MalformedSummary},
		},
		{
			name: "handoff not an object", role: pipeline.RoleQA, file: `{"status":"PASS","handoff":[1,2]}`,
			wantStatus: pipeline.StatusPass, wantSource: SourceFile, wantNote: "handoff is a JSON array, not an object, dropped",
		},
		{
			name: "handoff too big", role: pipeline.RoleQA,
			file:       `{"status":"PASS","handoff":{"log":"` + strings.Repeat("x", MaxHandoffBytes) + `"}}`,
			wantStatus: pipeline.StatusPass, wantSource: SourceFile, wantNote: "dropped",
		},
		{
			name: "summary trimmed, capped and cleaned", role: pipeline.RoleQA,
			file:       `{"status":"PASS","summary":["  a\u200b b  ","","` + strings.Repeat("y", 300) + `","c","d"]}`,
			wantStatus: pipeline.StatusPass, wantSource: SourceFile,
			wantSummary: []string{"a b", strings.Repeat("y", MaxSummaryLineRunes-1) + "…", "c"}, wantNote: "summary had 4 lines, kept 3",
		},
		{
			name: "case-insensitive keys", role: pipeline.RoleQA, file: `{"Status":"pass","Summary":"fine"}`,
			wantStatus: pipeline.StatusPass, wantSource: SourceFile, wantSummary: []string{"fine"},
		},
		{
			name: "html in handoff is not escaped", role: pipeline.RoleQA, file: `{"status":"FAIL","handoff":{"failures":["a < b && c > d"]}}`,
			wantStatus: pipeline.StatusFail, wantSource: SourceFile, wantHandoff: `{"failures":["a < b && c > d"]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ParseResult(tt.role, []byte(tt.file), []byte(tt.stdout))
			assert.Equal(t, tt.wantStatus, p.Result.Status, "notes: %v", p.Notes)
			assert.Equal(t, tt.wantSource, p.Source)
			if tt.wantSummary != nil {
				assert.Equal(t, tt.wantSummary, p.Result.Summary)
			}
			if tt.wantHandoff != "" {
				assert.JSONEq(t, tt.wantHandoff, string(p.Result.Handoff))
				assert.Equal(t, tt.wantHandoff, string(p.Result.Handoff), "compact and sorted")
			}
			if tt.wantNote != "" {
				assert.Contains(t, strings.Join(p.Notes, "\n"), tt.wantNote)
			}
		})
	}
}

func TestParseResultHostileInputIsFast(t *testing.T) {
	inputs := map[string]string{
		"open braces":   strings.Repeat("{", 1<<20),
		"nested":        strings.Repeat("{", 1<<19) + strings.Repeat("}", 1<<19),
		"many objects":  strings.Repeat(`{"a":1}`, 1<<17),
		"quotes":        strings.Repeat(`{"`, 1<<19),
		"status lines":  strings.Repeat("Status: nope\n", 1<<16),
		"wrapped deep":  strings.Repeat(`{"result":"`, 1000),
		"escaped nests": strings.Repeat(`{"result":"{\"result\":\"{\\\"status\\\":1}\"}"}`, 10000),
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			p := ParseResult(pipeline.RoleQA, []byte(in), []byte(in))
			assert.Equal(t, pipeline.StatusPartial, p.Result.Status)
		})
	}
}

func FuzzParseResult(f *testing.F) {
	f.Add(uint8(2), []byte(`{"status":"READY_FOR_QA","summary":["a"],"handoff":{"x":1}}`), []byte(""))
	f.Add(uint8(4), []byte(""), []byte("Status: PASS\nSummary: ok\n"))
	f.Add(uint8(1), []byte("{"), []byte("{\"type\":\"result\",\"result\":\"```json\\n{\\\"status\\\":\\\"BAZINGA\\\"}\\n```\"}"))
	f.Add(uint8(5), []byte(`{"status":"APPROVED","handoff":[1]}`), []byte(`{"status":"x","summary":{"a":1}}`))
	f.Add(uint8(6), []byte(`{"status":"INCOMPLETE","summary":"a\nb\nc\nd"}`), []byte("\x00\xff{\"status\":\"\u202eFAIL\"}"))
	f.Fuzz(func(t *testing.T, roleN uint8, file, stdout []byte) {
		roles := pipeline.Roles()
		role := roles[int(roleN)%len(roles)]
		p := ParseResult(role, file, stdout)
		require.NotEmpty(t, p.Source)
		if p.Result.Status != pipeline.StatusPartial {
			require.Contains(t, pipeline.AllowedStatuses(role), p.Result.Status)
		}
		require.LessOrEqual(t, len(p.Result.Summary), pipeline.MaxSummaryLines)
		for _, l := range p.Result.Summary {
			require.NotContains(t, l, "\n")
			require.LessOrEqual(t, len([]rune(l)), MaxSummaryLineRunes)
		}
		if len(p.Result.Handoff) > 0 {
			require.True(t, json.Valid(p.Result.Handoff), "handoff %q", p.Result.Handoff)
			require.Equal(t, byte('{'), p.Result.Handoff[0])
			require.LessOrEqual(t, len(p.Result.Handoff), MaxHandoffBytes)
		}
	})
}

func TestParseResultFindings(t *testing.T) {
	tests := []struct {
		name  string
		role  pipeline.Role
		file  string
		want  []pipeline.Finding
		notes []string
	}{
		{"a tech lead's findings", pipeline.RoleTechLead,
			`{"status":"APPROVED","findings":[{"severity":"HIGH","file":"a.go","line":3,"end_line":4,"problem":"leak","fix":"close it"},{"severity":"low","problem":"naming"}]}`,
			[]pipeline.Finding{{Severity: pipeline.SeverityHigh, File: "a.go", Line: 3, EndLine: 4, Problem: "leak", Fix: "close it"},
				{Severity: pipeline.SeverityLow, Problem: "naming"}}, nil},
		{"key case folded", pipeline.RoleQA, `{"status":"PASS","Findings":[{"severity":"medium","problem":"flaky"}]}`,
			[]pipeline.Finding{{Severity: pipeline.SeverityMedium, Problem: "flaky"}}, nil},
		{"a developer's are ignored", pipeline.RoleDeveloper, `{"status":"READY_FOR_QA","findings":[{"severity":"high","problem":"x"}]}`,
			nil, []string{"findings are for qa, tech_lead and investigator, not developer; ignored"}},
		{"not a list", pipeline.RoleQA, `{"status":"PASS","findings":"all fine"}`, nil, []string{"findings is not a list; dropped"}},
		{"bad entries dropped, good kept", pipeline.RoleQA, `{"status":"PASS","findings":[7,{"severity":"high","line":"12","problem":"x"},{"severity":"urgent","problem":"y"},{"severity":"low","problem":"z"}]}`,
			[]pipeline.Finding{{Severity: pipeline.SeverityLow, Problem: "z"}},
			[]string{"finding 1 is not an object with severity, file, line, end_line, problem and fix; dropped",
				"finding 2 is not an object with severity, file, line, end_line, problem and fix; dropped",
				`finding 1: severity "urgent" is not high, medium or low; dropped`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ParseResult(tt.role, []byte(tt.file), nil)
			assert.Equal(t, tt.want, p.Result.Findings)
			assert.Equal(t, tt.notes, p.Notes)
		})
	}
	t.Run("a hostile list costs a bounded read", func(t *testing.T) {
		one := `{"severity":"low","problem":"p"}`
		file := `{"status":"PASS","findings":[` + strings.Repeat(one+",", 100000) + one + `]}`
		p := ParseResult(pipeline.RoleQA, []byte(file), nil)
		assert.Len(t, p.Result.Findings, pipeline.MaxFindings)
		assert.Contains(t, p.Notes, fmt.Sprintf("findings had 100001 entries, read the first %d", 4*pipeline.MaxFindings))
	})
}
