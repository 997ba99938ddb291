package ghfake_test

import (
	"context"
	"fmt"
	"log"

	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/google/go-github/v66/github"
)

// A typical setup: a repository, the app's bot token, a workflow whose
// dispatches a fake runner completes, and a human labelling an issue.
func Example() {
	f, err := ghfake.New(ghfake.Options{WebhookMode: ghfake.Sync})
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	repo, err := f.CreateRepo("acme", "widgets", "main")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := repo.Push("acme", "main", map[string]string{"README.md": "# widgets\n"}, "Initial commit"); err != nil {
		log.Fatal(err)
	}
	f.AddToken("ghs_bot", f.BotLogin(), ghfake.Bot)
	f.SetPermission("alice", "write")
	_ = f.AddWorkflow("acme/widgets", "bazinga-agent.yml", ghfake.Workflow{
		RunName: "bazinga ${{ inputs.step }}",
		Inputs:  map[string]ghfake.WorkflowInput{"step": {Required: true}},
	})
	done := make(chan string, 1)
	f.OnDispatch(func(r ghfake.Run) {
		// A fake runner would run `bazinga action` here (see RunEnv).
		_ = f.CompleteRun(r.ID, "success")
		done <- r.DisplayTitle
	})

	n, _ := f.CreateIssue("alice", "Add a feature", "please")
	_ = f.LabelIssue("alice", n, "bazinga")

	gh := f.Client("ghs_bot") // go-github over HTTP, GitHub Enterprise URLs
	ctx := context.Background()
	_, _, _ = gh.Issues.CreateComment(ctx, "acme", "widgets", n, &github.IssueComment{Body: github.String("tracking")})
	_, _ = gh.Actions.CreateWorkflowDispatchEventByFileName(ctx, "acme", "widgets", "bazinga-agent.yml",
		github.CreateWorkflowDispatchEventRequest{Ref: "main", Inputs: map[string]any{"step": "s-0001-pm"}})
	fmt.Println(<-done)

	c := f.Counts()
	fmt.Println(c.Total, c.ContentCreating, f.Labels(n), len(f.Comments(n)))
	// Output:
	// bazinga s-0001-pm
	// 2 2 [bazinga] 1
}
