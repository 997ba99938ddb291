package codec

import (
	"fmt"
	"strings"

	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// Where a GitHub session's referenced texts are (issue 27): a group's task
// in the result comment of the pm step that planned it, the requirements in
// the issue's title and body. Whoever wrote a comment, what it holds is
// used only when it hashes to what the session recorded, so a comment
// edited by anyone with write access (the result comments' author is the
// bot or the job identity) is refused, never used.

// IssueRequirements is what a GitHub session works on: the issue's title
// and body, as one text.
func IssueRequirements(title, body string) string {
	if strings.TrimSpace(body) == "" {
		return title
	}
	return title + "\n\n" + body
}

// RequirementsWhere names the requirements' location for people.
func RequirementsWhere(repo ghapi.RepoRef, issue int) string {
	return fmt.Sprintf("the title and body of issue %s#%d", repo, issue)
}

// ResultCandidates finds, among an issue's comments, the result comments of
// a step: where a group's task is (pipeline.Session.FillTasks).
func ResultCandidates(comments []ghapi.Comment) func(step string) []pipeline.Candidate {
	var byStep map[string][]pipeline.Candidate // parsed on the first call, once
	return func(step string) []pipeline.Candidate {
		if byStep == nil {
			byStep = map[string][]pipeline.Candidate{}
			for _, c := range comments {
				if !strings.Contains(c.Body, ResultMarker) {
					continue
				}
				r, ok := ParseResultComment(c.Body)
				if !ok {
					continue
				}
				where := fmt.Sprintf("the result comment of step %s (comment %d)", r.Step, c.ID)
				if c.URL != "" {
					where = fmt.Sprintf("the result comment of step %s (%s)", r.Step, c.URL)
				}
				byStep[r.Step] = append(byStep[r.Step], pipeline.Candidate{Where: where, Result: r.Result})
			}
		}
		return byStep[step]
	}
}
