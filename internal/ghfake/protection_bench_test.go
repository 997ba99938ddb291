package ghfake

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// BenchmarkPushRules measures a fast-forward push over smart HTTP to a
// branch without rules, with a ruleset the pusher bypasses, and with a rule
// that reads the pushed pack (linear history): the cost of deciding a push
// as GitHub's pre-receive hook does.
func BenchmarkPushRules(b *testing.B) {
	for _, mode := range []string{"none", "bypassed", "pack"} {
		b.Run(mode, func(b *testing.B) {
			f, err := New(Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			dir := b.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# bench\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			r, err := f.CreateRepoFrom("acme", "bench", "main", dir)
			if err != nil {
				b.Fatal(err)
			}
			f.AddToken(botTok, f.BotLogin(), Bot)
			switch mode {
			case "bypassed":
				_, err = r.AddRuleset(Ruleset{Include: []string{"~ALL"}, RequirePR: true, Bypass: []string{f.BotLogin()}})
			case "pack":
				_, err = r.AddRuleset(Ruleset{Include: []string{"~ALL"}, LinearHistory: true})
			}
			if err != nil {
				b.Fatal(err)
			}
			wcDir := filepath.Join(b.TempDir(), "wc")
			repo, err := git.PlainClone(wcDir, false, &git.CloneOptions{URL: r.CloneURL(), Auth: tokenAuth(botTok)})
			if err != nil {
				b.Fatal(err)
			}
			wt, err := repo.Worktree()
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				name := fmt.Sprintf("f%d.txt", i)
				if err := os.WriteFile(filepath.Join(wcDir, name), []byte(name), 0o644); err != nil {
					b.Fatal(err)
				}
				if _, err := wt.Add(name); err != nil {
					b.Fatal(err)
				}
				if _, err := wt.Commit(name, &git.CommitOptions{Author: &object.Signature{Name: "b", Email: "b@x", When: time.Unix(1700000000+int64(i), 0)}}); err != nil {
					b.Fatal(err)
				}
				err := repo.PushContext(context.Background(), &git.PushOptions{Auth: tokenAuth(botTok), RefSpecs: []config.RefSpec{"refs/heads/main:refs/heads/main"}})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
