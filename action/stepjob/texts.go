package stepjob

import (
	"context"
	"fmt"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// stepTexts gives an agent step's session the texts its prompt shows that
// the state only references (issue 27): the group's task, from the result
// comment of the pm step that planned it, and the requirements, from the
// issue's title and body, each checked against the size and SHA-256 the
// session recorded. A task that does not match (someone with write access
// edited the comment) is never shown to an agent: the step hands over a
// permanent failure naming the group and the comment, and the orchestrator
// pauses the session with it. Requirements edited since the session started
// are not used either: the session works on what it started with, and the
// prompt and the job's log say so. ok is false when the job must end with
// code.
func (j *job) stepTexts(ctx context.Context, issue int, s *pipeline.Session, step pipeline.Step, ho HandOver,
	handOver func(HandOver, func(int) ([]byte, error)) error) (code int, ok bool) {
	if s.TextsMissing() {
		comments, err := j.listComments(ctx, issue)
		if err != nil {
			return j.fail(fmt.Sprintf("reading the comments of #%d for the group's task", issue), err), false
		}
		err = s.FillTasks(codec.ResultCandidates(comments))
		if alt, bad := pipeline.AlteredTask(err, step.Group); bad {
			reason := alt.Error()
			j.gha.WithFieldsMap(map[string]string{"title": "bazinga: the group's task was changed"}).Errorf("%s", reason)
			j.out.set(j.in.step, StatusFailed, []string{reason})
			ho.Outcome = OutcomeFailure
			ho.Failure = &codec.FailureRecord{Step: j.in.step, Role: step.Role, Group: step.Group, Reason: reason, RunURL: j.in.runURL, Permanent: true}
			if herr := handOver(ho, nil); herr != nil {
				j.gha.Warningf("bazinga: could not hand over the failure of %s: %v", j.in.step, herr)
			}
			return 1, false
		}
		if err != nil {
			// Another group's task: its own step fails on it; this one's prompt does not show it.
			j.log.Warn("another group's task cannot be read", "err", err)
		}
	}
	// Requirements within the bound are kept whole: nothing to fetch (an
	// edit since is announced on the issue and not followed either way).
	if ref := s.RequirementsRef; ref != nil && !ref.Matches(s.Requirements) {
		is, err := j.gh.GetIssue(ctx, j.in.repo, issue)
		if err != nil {
			return j.fail(fmt.Sprintf("reading the requirements (issue #%d)", issue), err), false
		}
		if note := s.FillRequirements(codec.IssueRequirements(is.Title, is.Body), codec.RequirementsWhere(j.in.repo, issue)); note != "" {
			j.gha.Warningf("bazinga: %s", note)
		}
	}
	return 0, true
}

// listComments lists a number's comments once per job: the task's location
// and the comments shown to the agent are read from the same list.
func (j *job) listComments(ctx context.Context, number int) ([]ghapi.Comment, error) {
	if cs, ok := j.comments[number]; ok {
		return cs, nil
	}
	cs, err := j.gh.ListComments(ctx, j.in.repo, number)
	if err != nil {
		return nil, err
	}
	if j.comments == nil {
		j.comments = map[int][]ghapi.Comment{}
	}
	j.comments[number] = cs
	return cs, nil
}
