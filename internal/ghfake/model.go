package ghfake

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
)

// issue is an issue or, with pr set, a pull request (they share numbers).
type issue struct {
	number      int
	id          int64
	title, body string
	user        string
	state       string // open | closed
	stateReason string
	labels      []string // canonical label names, in the order added
	created     time.Time
	updated     time.Time
	closed      time.Time
	closedBy    string
	comments    []int64 // live comment ids, in creation order
	pr          *pull
	// movedTo: the issue was transferred to another repository (moves.go);
	// its number here answers 301 with the new address.
	movedTo *issueMove
}

type pull struct {
	id       int64
	head     string // branch in the same repository
	base     string
	headSHA  string
	draft    bool
	merged   bool
	mergedAt time.Time
	mergedBy string
	mergeSHA string
	reviews  []*review
}

type comment struct {
	id      int64
	issue   int
	user    string
	body    string
	created time.Time
	updated time.Time
	viaApp  bool
}

type label struct {
	id          int64
	name        string
	color       string
	description string
}

type review struct {
	id        int64
	user      string
	body      string
	state     string // APPROVED | CHANGES_REQUESTED | COMMENTED
	commit    string
	submitted time.Time
	// comments are its inline comments (reviews.go).
	comments []reviewComment
}

func ts(t time.Time) *github.Timestamp {
	if t.IsZero() {
		return nil
	}
	return &github.Timestamp{Time: t.UTC().Truncate(time.Second)}
}

func (f *Fake) api(path string) string  { return f.srv.URL + "/api/v3" + path }
func (f *Fake) html(path string) string { return f.srv.URL + path }

func nodeID(kind string, id int64) *string {
	return github.String(fmt.Sprintf("%s_fake%d", kind, id))
}

// userJSON renders login as GitHub's simple user object. Caller holds f.mu.
func (f *Fake) userJSON(login string) *github.User {
	if login == "" {
		return nil
	}
	a := f.account(login, "")
	u := &github.User{
		Login:     github.String(a.login),
		ID:        github.Int64(a.id),
		NodeID:    nodeID("U", a.id),
		Type:      github.String(string(a.typ)),
		SiteAdmin: github.Bool(false),
		AvatarURL: github.String(f.html("/avatars/" + a.login)),
		HTMLURL:   github.String(f.html("/" + a.login)),
		URL:       github.String(f.api("/users/" + a.login)),
		// The simple-user schema requires every *_url (and gravatar_id).
		GravatarID:        github.String(""),
		FollowersURL:      github.String(f.api("/users/" + a.login + "/followers")),
		FollowingURL:      github.String(f.api("/users/" + a.login + "/following{/other_user}")),
		GistsURL:          github.String(f.api("/users/" + a.login + "/gists{/gist_id}")),
		StarredURL:        github.String(f.api("/users/" + a.login + "/starred{/owner}{/repo}")),
		SubscriptionsURL:  github.String(f.api("/users/" + a.login + "/subscriptions")),
		OrganizationsURL:  github.String(f.api("/users/" + a.login + "/orgs")),
		ReposURL:          github.String(f.api("/users/" + a.login + "/repos")),
		EventsURL:         github.String(f.api("/users/" + a.login + "/events{/privacy}")),
		ReceivedEventsURL: github.String(f.api("/users/" + a.login + "/received_events")),
	}
	if a.typ == Bot {
		u.HTMLURL = github.String(f.html("/apps/" + strings.TrimSuffix(a.login, "[bot]")))
	}
	return u
}

func (f *Fake) installationJSON() *github.Installation {
	return &github.Installation{ID: github.Int64(f.opts.InstallationID), NodeID: nodeID("MDIz", f.opts.InstallationID)}
}

// json renders the repository. Caller holds f.mu.
func (r *Repo) json() *github.Repository {
	f := r.f
	full := r.FullName()
	return &github.Repository{
		ID:            github.Int64(r.id),
		NodeID:        nodeID("R", r.id),
		Name:          github.String(r.name),
		FullName:      github.String(full),
		Owner:         f.userJSON(r.owner),
		Private:       github.Bool(r.settings.Private),
		Visibility:    github.String(r.settings.visibility()),
		Fork:          github.Bool(false),
		HTMLURL:       github.String(f.html("/" + full)),
		URL:           github.String(f.api("/repos/" + full)),
		CloneURL:      github.String(r.CloneURL()),
		GitURL:        github.String(r.CloneURL()),
		DefaultBranch: github.String(r.defaultBranch),
		HasIssues:     github.Bool(true),
		// The URL templates the repository schema requires.
		ArchiveURL:       github.String(f.api("/repos/" + full + "/{archive_format}{/ref}")),
		AssigneesURL:     github.String(f.api("/repos/" + full + "/assignees{/user}")),
		BlobsURL:         github.String(f.api("/repos/" + full + "/git/blobs{/sha}")),
		BranchesURL:      github.String(f.api("/repos/" + full + "/branches{/branch}")),
		CollaboratorsURL: github.String(f.api("/repos/" + full + "/collaborators{/collaborator}")),
		CommentsURL:      github.String(f.api("/repos/" + full + "/comments{/number}")),
		CommitsURL:       github.String(f.api("/repos/" + full + "/commits{/sha}")),
		CompareURL:       github.String(f.api("/repos/" + full + "/compare/{base}...{head}")),
		ContentsURL:      github.String(f.api("/repos/" + full + "/contents/{+path}")),
		ContributorsURL:  github.String(f.api("/repos/" + full + "/contributors")),
		DeploymentsURL:   github.String(f.api("/repos/" + full + "/deployments")),
		DownloadsURL:     github.String(f.api("/repos/" + full + "/downloads")),
		EventsURL:        github.String(f.api("/repos/" + full + "/events")),
		ForksURL:         github.String(f.api("/repos/" + full + "/forks")),
		GitCommitsURL:    github.String(f.api("/repos/" + full + "/git/commits{/sha}")),
		GitRefsURL:       github.String(f.api("/repos/" + full + "/git/refs{/sha}")),
		GitTagsURL:       github.String(f.api("/repos/" + full + "/git/tags{/sha}")),
		HooksURL:         github.String(f.api("/repos/" + full + "/hooks")),
		IssueCommentURL:  github.String(f.api("/repos/" + full + "/issues/comments{/number}")),
		IssueEventsURL:   github.String(f.api("/repos/" + full + "/issues/events{/number}")),
		IssuesURL:        github.String(f.api("/repos/" + full + "/issues{/number}")),
		KeysURL:          github.String(f.api("/repos/" + full + "/keys{/key_id}")),
		LabelsURL:        github.String(f.api("/repos/" + full + "/labels{/name}")),
		LanguagesURL:     github.String(f.api("/repos/" + full + "/languages")),
		MergesURL:        github.String(f.api("/repos/" + full + "/merges")),
		MilestonesURL:    github.String(f.api("/repos/" + full + "/milestones{/number}")),
		NotificationsURL: github.String(f.api("/repos/" + full + "/notifications{?since,all,participating}")),
		PullsURL:         github.String(f.api("/repos/" + full + "/pulls{/number}")),
		ReleasesURL:      github.String(f.api("/repos/" + full + "/releases{/id}")),
		StargazersURL:    github.String(f.api("/repos/" + full + "/stargazers")),
		StatusesURL:      github.String(f.api("/repos/" + full + "/statuses/{sha}")),
		SubscribersURL:   github.String(f.api("/repos/" + full + "/subscribers")),
		SubscriptionURL:  github.String(f.api("/repos/" + full + "/subscription")),
		TagsURL:          github.String(f.api("/repos/" + full + "/tags")),
		TeamsURL:         github.String(f.api("/repos/" + full + "/teams")),
		TreesURL:         github.String(f.api("/repos/" + full + "/git/trees{/sha}")),
		// The counts and flags the repository schema requires, as a new
		// repository with no forks, stars or watchers has them.
		SSHURL:           github.String("git@" + f.host() + ":" + full + ".git"),
		SVNURL:           github.String(f.html("/" + full)),
		ForksCount:       github.Int(0),
		StargazersCount:  github.Int(0),
		Watchers:         github.Int(0),
		WatchersCount:    github.Int(0),
		SubscribersCount: github.Int(0),
		NetworkCount:     github.Int(0),
		Size:             github.Int(0),
		OpenIssues:       github.Int(r.openIssues()),
		OpenIssuesCount:  github.Int(r.openIssues()),
		Archived:         github.Bool(false),
		Disabled:         github.Bool(false),
		HasDownloads:     github.Bool(true),
		HasPages:         github.Bool(false),
		HasProjects:      github.Bool(true),
		HasWiki:          github.Bool(true),
		CreatedAt:        ts(r.created),
		UpdatedAt:        ts(r.created),
		PushedAt:         ts(r.created),
	}
}

// openIssues counts the open issues and pull requests (GitHub's
// open_issues_count counts both). Caller holds f.mu.
func (r *Repo) openIssues() int {
	n := 0
	for _, is := range r.issues {
		if is.movedTo == nil && is.state == "open" {
			n++
		}
	}
	return n
}

// issueJSON renders an issue (or a pull request's issue view). Caller
// holds f.mu.
func (r *Repo) issueJSON(is *issue) *github.Issue {
	f := r.f
	base := "/repos/" + r.FullName() + "/issues/" + strconv.Itoa(is.number)
	out := &github.Issue{
		ID:                github.Int64(is.id),
		NodeID:            nodeID("I", is.id),
		Number:            github.Int(is.number),
		State:             github.String(is.state),
		Locked:            github.Bool(false),
		Title:             github.String(is.title),
		Body:              github.String(is.body),
		User:              f.userJSON(is.user),
		AuthorAssociation: github.String(r.assoc(is.user)),
		Labels:            r.labelsJSON(is.labels),
		Assignees:         []*github.User{},
		Comments:          github.Int(len(is.comments)),
		CreatedAt:         ts(is.created),
		UpdatedAt:         ts(is.updated),
		ClosedAt:          ts(is.closed),
		ClosedBy:          f.userJSON(is.closedBy),
		URL:               github.String(f.api(base)),
		HTMLURL:           github.String(f.html("/" + r.FullName() + "/issues/" + strconv.Itoa(is.number))),
		CommentsURL:       github.String(f.api(base + "/comments")),
		EventsURL:         github.String(f.api(base + "/events")),
		LabelsURL:         github.String(f.api(base + "/labels{/name}")),
		RepositoryURL:     github.String(f.api("/repos/" + r.FullName())),
	}
	if is.stateReason != "" {
		out.StateReason = github.String(is.stateReason)
	}
	if is.pr != nil {
		pbase := "/repos/" + r.FullName() + "/pulls/" + strconv.Itoa(is.number)
		out.HTMLURL = github.String(f.html("/" + r.FullName() + "/pull/" + strconv.Itoa(is.number)))
		out.Draft = github.Bool(is.pr.draft)
		out.PullRequestLinks = &github.PullRequestLinks{
			URL:      github.String(f.api(pbase)),
			HTMLURL:  out.HTMLURL,
			DiffURL:  github.String(*out.HTMLURL + ".diff"),
			PatchURL: github.String(*out.HTMLURL + ".patch"),
			MergedAt: ts(is.pr.mergedAt),
		}
	}
	return out
}

// assoc is GitHub's author_association of login on r. Caller holds f.mu.
func (r *Repo) assoc(login string) string {
	switch {
	case strings.EqualFold(login, r.owner):
		return "OWNER"
	case r.f.perms[strings.ToLower(login)] != "" && r.f.perms[strings.ToLower(login)] != "none":
		return "COLLABORATOR"
	}
	return "NONE"
}

func (r *Repo) labelByName(name string) *label {
	for _, l := range r.labels {
		if strings.EqualFold(l.name, name) {
			return l
		}
	}
	return nil
}

func (r *Repo) labelJSON(l *label) *github.Label {
	return &github.Label{
		ID:          github.Int64(l.id),
		NodeID:      nodeID("LA", l.id),
		URL:         github.String(r.f.api("/repos/" + r.FullName() + "/labels/" + l.name)),
		Name:        github.String(l.name),
		Color:       github.String(l.color),
		Description: github.String(l.description),
		Default:     github.Bool(false),
	}
}

func (r *Repo) labelsJSON(names []string) []*github.Label {
	out := []*github.Label{}
	for _, n := range names {
		if l := r.labelByName(n); l != nil {
			out = append(out, r.labelJSON(l))
		}
	}
	return out
}

func (r *Repo) commentJSON(c *comment) *github.IssueComment {
	f := r.f
	html := "/" + r.FullName() + "/issues/" + strconv.Itoa(c.issue)
	if is := r.issue(c.issue); is != nil && is.pr != nil {
		html = "/" + r.FullName() + "/pull/" + strconv.Itoa(c.issue)
	}
	return &github.IssueComment{
		ID:                github.Int64(c.id),
		NodeID:            nodeID("IC", c.id),
		Body:              github.String(c.body),
		User:              f.userJSON(c.user),
		CreatedAt:         ts(c.created),
		UpdatedAt:         ts(c.updated),
		AuthorAssociation: github.String(r.assoc(c.user)),
		URL:               github.String(f.api("/repos/" + r.FullName() + "/issues/comments/" + strconv.FormatInt(c.id, 10))),
		HTMLURL:           github.String(f.html(html + "#issuecomment-" + strconv.FormatInt(c.id, 10))),
		IssueURL:          github.String(f.api("/repos/" + r.FullName() + "/issues/" + strconv.Itoa(c.issue))),
	}
}

// prJSON renders a pull request. refs is a snapshot of the repository's refs
// (for the base sha); withMergeable computes mergeability, as GitHub does
// only for single pull request requests. Caller holds f.mu.
func (r *Repo) prJSON(is *issue, refs map[string]string, withMergeable bool) *github.PullRequest {
	f := r.f
	p := is.pr
	base := "/repos/" + r.FullName() + "/pulls/" + strconv.Itoa(is.number)
	html := "/" + r.FullName() + "/pull/" + strconv.Itoa(is.number)
	baseSHA := refs["refs/heads/"+p.base]
	out := &github.PullRequest{
		ID:                 github.Int64(p.id),
		NodeID:             nodeID("PR", p.id),
		Number:             github.Int(is.number),
		State:              github.String(is.state),
		Locked:             github.Bool(false),
		Title:              github.String(is.title),
		Body:               github.String(is.body),
		CreatedAt:          ts(is.created),
		UpdatedAt:          ts(is.updated),
		ClosedAt:           ts(is.closed),
		MergedAt:           ts(p.mergedAt),
		Labels:             r.labelsJSON(is.labels),
		User:               f.userJSON(is.user),
		Draft:              github.Bool(p.draft),
		Merged:             github.Bool(p.merged),
		MergedBy:           f.userJSON(p.mergedBy),
		AuthorAssociation:  github.String(r.assoc(is.user)),
		Comments:           github.Int(len(is.comments)),
		ReviewComments:     github.Int(0),
		URL:                github.String(f.api(base)),
		HTMLURL:            github.String(f.html(html)),
		IssueURL:           github.String(f.api("/repos/" + r.FullName() + "/issues/" + strconv.Itoa(is.number))),
		DiffURL:            github.String(f.html(html + ".diff")),
		PatchURL:           github.String(f.html(html + ".patch")),
		CommitsURL:         github.String(f.api(base + "/commits")),
		CommentsURL:        github.String(f.api("/repos/" + r.FullName() + "/issues/" + strconv.Itoa(is.number) + "/comments")),
		RequestedReviewers: []*github.User{},
		Assignees:          []*github.User{},
		Head: &github.PullRequestBranch{
			Label: github.String(r.owner + ":" + p.head),
			Ref:   github.String(p.head),
			SHA:   github.String(p.headSHA),
			Repo:  r.json(),
			User:  f.userJSON(r.owner),
		},
		Base: &github.PullRequestBranch{
			Label: github.String(r.owner + ":" + p.base),
			Ref:   github.String(p.base),
			SHA:   github.String(baseSHA),
			Repo:  r.json(),
			User:  f.userJSON(r.owner),
		},
		MaintainerCanModify: github.Bool(false),
		ReviewCommentsURL:   github.String(f.api(base + "/comments")),
		ReviewCommentURL:    github.String(f.api("/repos/" + r.FullName() + "/pulls/comments{/number}")),
		StatusesURL:         github.String(f.api("/repos/" + r.FullName() + "/statuses/" + p.headSHA)),
		RequestedTeams:      []*github.Team{},
		Links: &github.PRLinks{
			Self:           &github.PRLink{HRef: github.String(f.api(base))},
			HTML:           &github.PRLink{HRef: github.String(f.html(html))},
			Issue:          &github.PRLink{HRef: github.String(f.api("/repos/" + r.FullName() + "/issues/" + strconv.Itoa(is.number)))},
			Comments:       &github.PRLink{HRef: github.String(f.api("/repos/" + r.FullName() + "/issues/" + strconv.Itoa(is.number) + "/comments"))},
			ReviewComments: &github.PRLink{HRef: github.String(f.api(base + "/comments"))},
			ReviewComment:  &github.PRLink{HRef: github.String(f.api("/repos/" + r.FullName() + "/pulls/comments{/number}"))},
			Commits:        &github.PRLink{HRef: github.String(f.api(base + "/commits"))},
			Statuses:       &github.PRLink{HRef: github.String(f.api("/repos/" + r.FullName() + "/statuses/" + p.headSHA))},
		},
	}
	if p.mergeSHA != "" {
		out.MergeCommitSHA = github.String(p.mergeSHA)
	}
	if withMergeable {
		switch {
		case is.state != "open":
			out.MergeableState = github.String("unknown")
		case baseSHA == "" || p.headSHA == "":
			out.Mergeable = github.Bool(false)
			out.MergeableState = github.String("dirty")
		default:
			_, conflict, err := r.mergeTree(baseSHA, p.headSHA)
			out.Mergeable = github.Bool(err == nil && !conflict)
			state := "clean"
			if conflict || err != nil {
				state = "dirty"
			} else if p.draft {
				state = "draft"
			}
			out.MergeableState = github.String(state)
			out.Rebaseable = github.Bool(err == nil && !conflict)
		}
	}
	return out
}

func (r *Repo) reviewJSON(is *issue, rv *review) *github.PullRequestReview {
	f := r.f
	return &github.PullRequestReview{
		ID:                github.Int64(rv.id),
		NodeID:            nodeID("PRR", rv.id),
		User:              f.userJSON(rv.user),
		Body:              github.String(rv.body),
		SubmittedAt:       ts(rv.submitted),
		CommitID:          github.String(rv.commit),
		State:             github.String(rv.state),
		AuthorAssociation: github.String(r.assoc(rv.user)),
		HTMLURL:           github.String(f.html(fmt.Sprintf("/%s/pull/%d#pullrequestreview-%d", r.FullName(), is.number, rv.id))),
		PullRequestURL:    github.String(f.api(fmt.Sprintf("/repos/%s/pulls/%d", r.FullName(), is.number))),
	}
}

// issue returns issue or pull request n, or nil. Caller holds f.mu.
func (r *Repo) issue(n int) *issue {
	if n < 1 || n > len(r.issues) || r.issues[n-1].movedTo != nil {
		return nil
	}
	return r.issues[n-1]
}

// setLocation gives a 201 the Location header GitHub sends: the API URL of
// what was created (the body's url).
func setLocation(c *rc) {
	if c.status != 201 || c.hdr.Get("Location") != "" {
		return
	}
	var v struct {
		URL string `json:"url"`
	}
	if json.Unmarshal(c.out, &v) == nil && v.URL != "" {
		c.hdr.Set("Location", v.URL)
	}
}

// Nullable fields GitHub's schemas require: go-github drops nil fields
// (omitempty), GitHub sends them as null.
var (
	issueNulls = []string{"assignee", "milestone", "closed_at", "body", "active_lock_reason"}
	pullNulls  = []string{"assignee", "milestone", "closed_at", "merged_at", "merge_commit_sha", "body", "active_lock_reason", "auto_merge"}
	// A single pull request also has these (null while GitHub computes
	// mergeability, or when nobody merged it).
	fullPullNulls = []string{"merged_by", "mergeable", "rebaseable"}
)

// withRequiredNulls adds the schema's required-but-null fields to the
// encoding b of v, for the types whose schemas have them.
func withRequiredNulls(v any, b []byte) []byte {
	var keys []string
	list := false
	switch v.(type) {
	case *github.Issue:
		keys = issueNulls
	case []*github.Issue:
		keys, list = issueNulls, true
	case *github.PullRequest:
		keys = append(append([]string(nil), pullNulls...), fullPullNulls...)
	case []*github.PullRequest:
		keys, list = pullNulls, true
	default:
		return b
	}
	fill := func(m map[string]any) {
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				m[k] = nil
			}
		}
	}
	if list {
		var ms []map[string]any
		if json.Unmarshal(b, &ms) != nil {
			return b
		}
		for _, m := range ms {
			fill(m)
		}
		if out, err := json.Marshal(ms); err == nil {
			return out
		}
		return b
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return b
	}
	fill(m)
	if out, err := json.Marshal(m); err == nil {
		return out
	}
	return b
}
