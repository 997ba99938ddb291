package bot

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bazinga-bot/bazinga/ghapi"
)

// refusalEvery is how often one person is told that they may not run
// commands: a hundred refused commands must not become a hundred comments
// (GitHub allows an installation 80 content-creating requests a minute, and
// anyone can open issues on a public repository).
const refusalEvery = time.Hour

// refusalMemory bounds the people remembered as refused (App mode).
const refusalMemory = 10000

// refusals is the bot's memory of refusals: installation and login, when
// told, on the bot's clock. A restart forgets it; the thread check below
// still holds.
type refusals map[string]time.Time

// reserve reports whether key was not told since since, and records now if
// so. Expired entries are dropped when the memory is full, then the oldest.
func (r refusals) reserve(key string, now, since time.Time) bool {
	if t, ok := r[key]; ok && t.After(since) {
		return false
	}
	if len(r) >= refusalMemory {
		var oldest string
		for k, t := range r {
			if !t.After(since) {
				delete(r, k)
			} else if oldest == "" || t.Before(r[oldest]) {
				oldest = k
			}
		}
		if len(r) >= refusalMemory {
			delete(r, oldest)
		}
	}
	r[key] = now
	return true
}

// mayBeRefused reports whether a command's author is worth a refusal: only
// someone GitHub shows as related to the repository (a collaborator with
// read or triage, an organisation member, the owner) may believe commands
// are theirs to run. Anyone else — NONE, CONTRIBUTOR, FIRST_TIMER,
// FIRST_TIME_CONTRIBUTOR, MANNEQUIN: people without a role, who cannot
// trigger anything — gets no reply at all (the help says who may). An
// empty association (a payload without it) is treated as related.
func mayBeRefused(association string) bool {
	switch strings.ToUpper(association) {
	case "OWNER", "MEMBER", "COLLABORATOR", "":
		return true
	}
	return false
}

// refuse tells login they may not run commands, at most once per
// refusalEvery across the whole installation: first the bot's memory
// (App mode, across every issue and PR), then the thread itself, whose
// bot comments hold the memory where each event is a new process
// (Action-only) or after a restart.
func (b *Bot) refuse(ctx context.Context, gh GitHub, inst int64, repo ghapi.RepoRef, number int, login string) error {
	key := strconv.FormatInt(inst, 10) + "/" + strings.ToLower(login)
	now := b.o.Now()
	b.mu.Lock()
	// Reserved before the API calls: concurrent deliveries of the same
	// person's commands post one refusal between them.
	fresh := b.refused.reserve(key, now, now.Add(-refusalEvery))
	b.mu.Unlock()
	if !fresh {
		b.log.Info("refusal already posted within the hour in this installation", "repo", repo.String(), "number", number, "user", login)
		return nil
	}
	text := refusalText(login)
	cs, err := gh.ListComments(ctx, repo, number)
	if err != nil {
		b.forgetRefusal(key)
		return err
	}
	since := b.o.Now().Add(-refusalEvery)
	for _, c := range cs {
		if b.own(c.Author) && c.Body == text && c.CreatedAt.After(since) {
			b.log.Info("refusal already posted within the hour", "repo", repo.String(), "number", number, "user", login)
			return nil
		}
	}
	if _, err = gh.CreateComment(ctx, repo, number, text); err != nil {
		b.forgetRefusal(key)
		return err
	}
	return nil
}

func (b *Bot) forgetRefusal(key string) {
	b.mu.Lock()
	delete(b.refused, key)
	b.mu.Unlock()
}

func refusalText(login string) string {
	return fmt.Sprintf("@%s only people with write, maintain or admin permission on this repository can run bazinga commands.", login)
}
