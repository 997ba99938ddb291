package stepjob

import (
	"context"
	"sort"
	"strings"

	"github.com/bazinga-bot/bazinga/agent"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// maxComments bounds the human comments given to one step (the prompt
// builder cuts them further to its budget).
const maxComments = 20

// humanComments gathers what people with write access said on the issue and
// the group's PR, for the step's prompt: untrusted data, fenced there. Bot
// comments, bazinga's own blocks and slash commands are left out, and so is
// anyone below write permission (checked once per author).
func (j *job) humanComments(ctx context.Context, issue int, s pipeline.Session, group string) []agent.UntrustedText {
	numbers := []int{issue}
	if g := s.Group(group); g != nil && group != pipeline.LeadGroup {
		if pr, ok, err := j.gh.FindPR(ctx, j.in.repo, g.Branch); err == nil && ok {
			numbers = append(numbers, pr.Number)
		}
	}
	var all []ghapi.Comment
	for _, n := range numbers {
		cs, err := j.listComments(ctx, n)
		if err != nil {
			j.log.Info("comments for the prompt could not be read", "number", n, "err", err)
			continue
		}
		all = append(all, cs...)
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].CreatedAt.Before(all[b].CreatedAt) })
	allowed := map[string]bool{}
	var out []agent.UntrustedText
	for _, c := range all {
		body := strings.TrimSpace(c.Body)
		if c.AuthorType == "Bot" || strings.HasSuffix(c.Author, "[bot]") || body == "" ||
			strings.HasPrefix(strings.ToLower(body), "/bazinga") || strings.Contains(body, "<!-- bazinga:") {
			continue
		}
		ok, seen := allowed[c.Author]
		if !seen {
			role, err := j.gh.GetPermission(ctx, j.in.repo, c.Author)
			ok = err == nil && (role == "admin" || role == "maintain" || role == "write")
			allowed[c.Author] = ok
		}
		if ok {
			out = append(out, agent.UntrustedText{Author: c.Author, Body: body})
		}
	}
	if len(out) > maxComments {
		out = out[len(out)-maxComments:]
	}
	return out
}
