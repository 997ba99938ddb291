package ghfake

// Permission sets accepted for routes (GitHub App permission names).
const (
	issuesRead  = "issues=read; pull_requests=read"
	issuesWrite = "issues=write; pull_requests=write"
	pullsRead   = "pull_requests=read"
	pullsWrite  = "pull_requests=write"
	contentsR   = "contents=read"
	contentsW   = "contents=write"
	actionsR    = "actions=read"
	actionsW    = "actions=write"
)

// registerRoutes declares the REST endpoints. Order matters where
// templates overlap: literal segments are registered before parameters
// (issues/comments/{id} before issues/{number}/...).
func (f *Fake) registerRoutes() {
	const repo = "/repos/{owner}/{repo}"

	// Apps and installations (JWT).
	f.add("GET /app", f.getApp, ro{app: true})
	f.add("GET /app/installations", f.listInstallations, ro{app: true})
	f.add("POST /app/installations/{installation_id}/access_tokens", f.createInstallationToken, ro{app: true})
	f.add("GET /installation/repositories", f.listInstallationRepos, ro{})
	f.add("POST /app-manifests/{code}/conversions", f.convertManifest, ro{open: true})
	// The manifest flow's web pages (github.com, not the API).
	f.add("POST /settings/apps/new", f.newAppFromManifest, ro{open: true})
	f.add("POST /organizations/{org}/settings/apps/new", f.newAppFromManifest, ro{open: true})

	// Repository.
	f.add("GET "+repo, f.getRepo, ro{})
	f.add("GET "+repo+"/contents/{path...}", f.getContents, ro{perm: contentsR})
	f.add("GET "+repo+"/collaborators/{username}/permission", f.getPermission, ro{})
	f.add("GET "+repo+"/installation", f.getRepoInstallation, ro{app: true}) // oidc.go

	// Issue comments (literal "comments" before {number}).
	f.add("GET "+repo+"/issues/comments/{comment_id}", f.getComment, ro{perm: issuesRead})
	f.add("PATCH "+repo+"/issues/comments/{comment_id}", f.editComment, ro{creates: true, perm: issuesWrite, role: "read"})

	// Issues.
	f.add("GET "+repo+"/issues", f.listIssues, ro{perm: issuesRead})
	f.add("GET "+repo+"/issues/{number}", f.getIssue, ro{perm: issuesRead})
	f.add("PATCH "+repo+"/issues/{number}", f.editIssue, ro{creates: true, perm: issuesWrite, role: "read"})
	f.add("GET "+repo+"/issues/{number}/comments", f.listComments, ro{perm: issuesRead})
	f.add("POST "+repo+"/issues/{number}/comments", f.createComment, ro{creates: true, perm: issuesWrite, role: "read"})
	f.add("PUT "+repo+"/issues/{number}/labels", f.replaceIssueLabels, ro{creates: true, perm: issuesWrite, role: "triage"})

	// Pull requests.
	f.add("GET "+repo+"/pulls", f.listPulls, ro{perm: pullsRead})
	// GitHub Actions may open PRs only where the repository allows it.
	f.add("POST "+repo+"/pulls", func(c *rc) {
		if !f.actionsMayNotCreatePR(c) {
			f.createPull(c)
		}
	}, ro{creates: true, perm: pullsWrite})
	f.add("GET "+repo+"/pulls/{number}", f.getPull, ro{perm: pullsRead})
	f.add("PATCH "+repo+"/pulls/{number}", f.editPull, ro{creates: true, perm: pullsWrite, role: "read"})
	f.add("PUT "+repo+"/pulls/{number}/merge", f.mergePull, ro{creates: true, perm: contentsW})
	f.add("GET "+repo+"/pulls/{number}/reviews", f.listReviews, ro{perm: pullsRead})
	f.add("POST "+repo+"/pulls/{number}/reviews", f.createReview, ro{creates: true, perm: pullsWrite})
	f.add("GET "+repo+"/pulls/{number}/files", f.listPullFiles, ro{perm: pullsRead})
	// GraphQL (graphql.go): the operation decides the permission.
	f.add("POST /graphql", f.graphqlHandler, ro{graphql: true})
	f.add("POST /api/graphql", f.graphqlHandler, ro{graphql: true})

	// Git references.
	f.add("GET "+repo+"/git/ref/{ref...}", f.getRef, ro{perm: contentsR})
	f.add("POST "+repo+"/git/refs", f.createRef, ro{creates: true, perm: contentsW})

	// Actions.
	f.add("POST "+repo+"/actions/workflows/{workflow_id}/dispatches", f.dispatch, ro{creates: true, perm: actionsW})
	f.add("GET "+repo+"/actions/workflows/{workflow_id}/runs", f.listWorkflowRuns, ro{perm: actionsR})
	f.add("GET "+repo+"/actions/runs", f.listRepoRuns, ro{perm: actionsR})
	f.add("GET "+repo+"/actions/runs/{run_id}", f.getRun, ro{perm: actionsR})
	f.add("POST "+repo+"/actions/runs/{run_id}/approve", f.approveRun, ro{creates: true, perm: actionsW})
	f.add("GET "+repo+"/actions/runs/{run_id}/jobs", f.listRunJobs, ro{perm: actionsR})
	f.add("POST "+repo+"/actions/runs/{run_id}/cancel", f.cancelRun, ro{creates: true, perm: actionsW})

	// Branches, protection, rulesets, checks and statuses (protection.go).
	f.registerProtectionRoutes(repo)
}
