package ghfake

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wc is a go-git working copy of the env's repository.
type wc struct {
	t    *testing.T
	repo *git.Repository
	dir  string
}

func (e *env) clone(t *testing.T) *wc {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "wc")
	r, err := git.PlainClone(dir, false, &git.CloneOptions{URL: e.repo.CloneURL(), Auth: tokenAuth(botTok)})
	require.NoError(t, err)
	return &wc{t: t, repo: r, dir: dir}
}

// commit commits a file on the working copy's HEAD.
func (w *wc) commit(name, content string) string {
	return commitFile(w.t, w.repo, name, content).String()
}

// rawCommit writes a commit object with the given parents and tree and, if
// sig is set, a signature header, and returns it.
func (w *wc) rawCommit(tree plumbing.Hash, parents []plumbing.Hash, msg, sig string) string {
	w.t.Helper()
	c := &object.Commit{
		Author:       object.Signature{Name: "dev", Email: "dev@example.com", When: time.Unix(1700000000, 0)},
		Committer:    object.Signature{Name: "dev", Email: "dev@example.com", When: time.Unix(1700000000, 0)},
		Message:      msg,
		TreeHash:     tree,
		ParentHashes: parents,
		PGPSignature: sig,
	}
	obj := w.repo.Storer.NewEncodedObject()
	require.NoError(w.t, c.Encode(obj))
	h, err := w.repo.Storer.SetEncodedObject(obj)
	require.NoError(w.t, err)
	return h.String()
}

func (w *wc) head() *object.Commit {
	w.t.Helper()
	ref, err := w.repo.Head()
	require.NoError(w.t, err)
	c, err := w.repo.CommitObject(ref.Hash())
	require.NoError(w.t, err)
	return c
}

// push pushes refspec as tok and returns the error and the remote's
// progress output (side-band).
func (w *wc) push(tok string, refspecs ...string) (error, string) {
	var progress bytes.Buffer
	var specs []config.RefSpec
	for _, s := range refspecs {
		specs = append(specs, config.RefSpec(s))
	}
	err := w.repo.Push(&git.PushOptions{Auth: tokenAuth(tok), RefSpecs: specs, Progress: &progress})
	if err == git.NoErrAlreadyUpToDate {
		err = nil
	}
	return err, progress.String()
}

const fakeSig = "-----BEGIN PGP SIGNATURE-----\n\niQEzBAABCAAdFiEEfake\n-----END PGP SIGNATURE-----\n"

func TestPushRules(t *testing.T) {
	const adminTok = "ghp_owner"
	cases := []struct {
		name string
		// setup gives the repository its rules; it may record checks.
		setup func(t *testing.T, e *env)
		// change prepares the working copy and returns the refspec pushed.
		change func(t *testing.T, e *env, w *wc) string
		tok    string
		// want are the progress lines expected (empty: the push succeeds).
		want   []string
		reason string
	}{
		{
			name:  "no rules",
			setup: func(*testing.T, *env) {},
			change: func(_ *testing.T, _ *env, w *wc) string {
				w.commit("a.txt", "a")
				return "refs/heads/main:refs/heads/main"
			},
		},
		{
			name:  "require a pull request",
			setup: func(t *testing.T, e *env) { require.NoError(t, e.repo.Protect("main", Protection{RequirePR: true})) },
			change: func(_ *testing.T, _ *env, w *wc) string {
				w.commit("a.txt", "a")
				return "refs/heads/main:refs/heads/main"
			},
			want: []string{"error: GH006: Protected branch update failed for refs/heads/main.",
				"- Changes must be made through a pull request."},
			reason: "protected branch hook declined",
		},
		{
			name:  "another branch is not protected",
			setup: func(t *testing.T, e *env) { require.NoError(t, e.repo.Protect("main", Protection{RequirePR: true})) },
			change: func(_ *testing.T, _ *env, w *wc) string {
				w.commit("a.txt", "a")
				return "refs/heads/main:refs/heads/feature"
			},
		},
		{
			name: "wildcard pattern",
			setup: func(t *testing.T, e *env) {
				require.NoError(t, e.repo.Protect("release/*", Protection{RequirePR: true}))
			},
			change: func(_ *testing.T, _ *env, w *wc) string {
				w.commit("a.txt", "a")
				return "refs/heads/main:refs/heads/release/1.0"
			},
			want:   []string{"error: GH006: Protected branch update failed for refs/heads/release/1.0."},
			reason: "protected branch hook declined",
		},
		{
			name: "required check missing",
			setup: func(t *testing.T, e *env) {
				require.NoError(t, e.repo.Protect("main", Protection{RequiredChecks: []string{"ci"}}))
			},
			change: func(_ *testing.T, _ *env, w *wc) string {
				w.commit("a.txt", "a")
				return "refs/heads/main:refs/heads/main"
			},
			want:   []string{"- Required status check \"ci\" is expected."},
			reason: "protected branch hook declined",
		},
		{
			name: "two required checks missing",
			setup: func(t *testing.T, e *env) {
				require.NoError(t, e.repo.Protect("main", Protection{RequiredChecks: []string{"ci", "lint"}}))
			},
			change: func(_ *testing.T, _ *env, w *wc) string {
				w.commit("a.txt", "a")
				return "refs/heads/main:refs/heads/main"
			},
			want:   []string{"- 2 of 2 required status checks are expected."},
			reason: "protected branch hook declined",
		},
		{
			name: "a commit whose checks passed may be pushed",
			setup: func(t *testing.T, e *env) {
				require.NoError(t, e.repo.Protect("main", Protection{RequiredChecks: []string{"ci"}}))
			},
			change: func(t *testing.T, e *env, w *wc) string {
				sha := w.commit("a.txt", "a")
				err, _ := w.push(botTok, "refs/heads/main:refs/heads/tested")
				require.NoError(t, err)
				require.NoError(t, e.repo.SetCheck(sha, "ci", "completed", "success"))
				return "refs/heads/main:refs/heads/main"
			},
		},
		{
			name: "a merge commit of an up-to-date tested head may be pushed",
			setup: func(t *testing.T, e *env) {
				require.NoError(t, e.repo.Protect("main", Protection{RequiredChecks: []string{"ci"}}))
			},
			change: func(t *testing.T, e *env, w *wc) string {
				base := w.head()
				tip := w.commit("a.txt", "a")
				err, _ := w.push(botTok, "refs/heads/main:refs/heads/tested")
				require.NoError(t, err)
				require.NoError(t, e.repo.SetStatus(tip, "ci", "success"))
				tipC := w.head()
				merge := w.rawCommit(tipC.TreeHash, []plumbing.Hash{base.Hash, tipC.Hash}, "Merge tested", "")
				require.NoError(t, w.repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/merged", plumbing.NewHash(merge))))
				return "refs/heads/merged:refs/heads/main"
			},
		},
		{
			name: "linear history refuses merge commits",
			setup: func(t *testing.T, e *env) {
				require.NoError(t, e.repo.Protect("main", Protection{LinearHistory: true}))
			},
			change: func(t *testing.T, e *env, w *wc) string {
				base := w.head()
				tip := w.head()
				w.commit("a.txt", "a")
				tip = w.head()
				merge := w.rawCommit(tip.TreeHash, []plumbing.Hash{base.Hash, tip.Hash}, "Merge", "")
				require.NoError(t, w.repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/merged", plumbing.NewHash(merge))))
				return "refs/heads/merged:refs/heads/main"
			},
			want:   []string{"- This branch must not contain merge commits."},
			reason: "protected branch hook declined",
		},
		{
			name: "the pack is found after a command naming PACK",
			setup: func(t *testing.T, e *env) {
				e.branch(t, "PACKAGING", map[string]string{"p": "p"})
				require.NoError(t, e.repo.Protect("PACK*", Protection{LinearHistory: true}))
			},
			change: func(t *testing.T, e *env, w *wc) string {
				ref, err := w.repo.Reference("refs/remotes/origin/PACKAGING", true)
				require.NoError(t, err)
				base, err := w.repo.CommitObject(ref.Hash())
				require.NoError(t, err)
				w.commit("a.txt", "a")
				tip := w.head()
				merge := w.rawCommit(tip.TreeHash, []plumbing.Hash{base.Hash, tip.Hash}, "Merge", "")
				require.NoError(t, w.repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/merged", plumbing.NewHash(merge))))
				return "refs/heads/merged:refs/heads/PACKAGING"
			},
			want:   []string{"- This branch must not contain merge commits."},
			reason: "protected branch hook declined",
		},
		{
			name: "linear history accepts a fast-forward",
			setup: func(t *testing.T, e *env) {
				require.NoError(t, e.repo.Protect("main", Protection{LinearHistory: true}))
			},
			change: func(_ *testing.T, _ *env, w *wc) string {
				w.commit("a.txt", "a")
				w.commit("b.txt", "b")
				return "refs/heads/main:refs/heads/main"
			},
		},
		{
			name: "signed commits refuse an unsigned one",
			setup: func(t *testing.T, e *env) {
				require.NoError(t, e.repo.Protect("main", Protection{SignedCommits: true}))
			},
			change: func(_ *testing.T, _ *env, w *wc) string {
				w.commit("a.txt", "a")
				return "refs/heads/main:refs/heads/main"
			},
			want:   []string{"- Commits must have verified signatures."},
			reason: "protected branch hook declined",
		},
		{
			name: "signed commits accept a signed one",
			setup: func(t *testing.T, e *env) {
				require.NoError(t, e.repo.Protect("main", Protection{SignedCommits: true}))
			},
			change: func(t *testing.T, e *env, w *wc) string {
				base := w.head()
				signed := w.rawCommit(base.TreeHash, []plumbing.Hash{base.Hash}, "signed", fakeSig)
				require.NoError(t, w.repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/signed", plumbing.NewHash(signed))))
				return "refs/heads/signed:refs/heads/main"
			},
		},
		{
			name:  "force push refused by default",
			setup: func(t *testing.T, e *env) { require.NoError(t, e.repo.Protect("main", Protection{})) },
			change: func(t *testing.T, e *env, w *wc) string {
				base := w.head()
				other := w.rawCommit(base.TreeHash, nil, "unrelated root", "")
				require.NoError(t, w.repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/other", plumbing.NewHash(other))))
				return "+refs/heads/other:refs/heads/main"
			},
			want:   []string{"- Cannot force-push to this branch."},
			reason: "protected branch hook declined",
		},
		{
			name: "force push allowed when the rule allows it",
			setup: func(t *testing.T, e *env) {
				require.NoError(t, e.repo.Protect("main", Protection{AllowForcePushes: true}))
			},
			change: func(t *testing.T, e *env, w *wc) string {
				base := w.head()
				other := w.rawCommit(base.TreeHash, nil, "unrelated root", "")
				require.NoError(t, w.repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/other", plumbing.NewHash(other))))
				return "+refs/heads/other:refs/heads/main"
			},
		},
		{
			name:  "deletion refused",
			setup: func(t *testing.T, e *env) { require.NoError(t, e.repo.Protect("release", Protection{})) },
			change: func(t *testing.T, e *env, _ *wc) string {
				e.branch(t, "release", map[string]string{"r": "r"})
				return ":refs/heads/release"
			},
			want:   []string{"- Cannot delete this protected branch."},
			reason: "protected branch hook declined",
		},
		{
			name:  "admins bypass classic protection",
			setup: func(t *testing.T, e *env) { require.NoError(t, e.repo.Protect("main", Protection{RequirePR: true})) },
			change: func(_ *testing.T, _ *env, w *wc) string {
				w.commit("a.txt", "a")
				return "refs/heads/main:refs/heads/main"
			},
			tok: adminTok,
		},
		{
			name: "unless admins are included",
			setup: func(t *testing.T, e *env) {
				require.NoError(t, e.repo.Protect("main", Protection{RequirePR: true, EnforceAdmins: true}))
			},
			change: func(_ *testing.T, _ *env, w *wc) string {
				w.commit("a.txt", "a")
				return "refs/heads/main:refs/heads/main"
			},
			tok:    adminTok,
			want:   []string{"- Changes must be made through a pull request."},
			reason: "protected branch hook declined",
		},
		{
			name: "ruleset requiring a pull request",
			setup: func(t *testing.T, e *env) {
				_, err := e.repo.AddRuleset(Ruleset{Name: "main", Include: []string{"~DEFAULT_BRANCH"}, RequirePR: true})
				require.NoError(t, err)
			},
			change: func(_ *testing.T, _ *env, w *wc) string {
				w.commit("a.txt", "a")
				return "refs/heads/main:refs/heads/main"
			},
			tok: adminTok, // rulesets bind admins too
			want: []string{"error: GH013: Repository rule violations found for refs/heads/main.",
				"Review all repository rules at ", "/acme/widgets/rules?ref=refs%2Fheads%2Fmain",
				"- Changes must be made through a pull request."},
			reason: "push declined due to repository rule violations",
		},
		{
			name: "ruleset bypass list",
			setup: func(t *testing.T, e *env) {
				_, err := e.repo.AddRuleset(Ruleset{Include: []string{"~ALL"}, RequirePR: true, Bypass: []string{"bazinga[bot]"}})
				require.NoError(t, err)
			},
			change: func(_ *testing.T, _ *env, w *wc) string {
				w.commit("a.txt", "a")
				return "refs/heads/main:refs/heads/main"
			},
		},
		{
			name: "ruleset in evaluate mode is not enforced",
			setup: func(t *testing.T, e *env) {
				_, err := e.repo.AddRuleset(Ruleset{Include: []string{"~ALL"}, RequirePR: true, Enforcement: EnforcementEvaluate})
				require.NoError(t, err)
			},
			change: func(_ *testing.T, _ *env, w *wc) string {
				w.commit("a.txt", "a")
				return "refs/heads/main:refs/heads/main"
			},
		},
		{
			name: "ruleset exclude",
			setup: func(t *testing.T, e *env) {
				_, err := e.repo.AddRuleset(Ruleset{Include: []string{"~ALL"}, Exclude: []string{"refs/heads/scratch/**"}, RestrictUpdates: true})
				require.NoError(t, err)
			},
			change: func(_ *testing.T, _ *env, w *wc) string {
				w.commit("a.txt", "a")
				return "refs/heads/main:refs/heads/scratch/x/y"
			},
		},
		{
			name: "ruleset restricting creations",
			setup: func(t *testing.T, e *env) {
				_, err := e.repo.AddRuleset(Ruleset{Include: []string{"refs/heads/release/*"}, RestrictCreations: true})
				require.NoError(t, err)
			},
			change: func(_ *testing.T, _ *env, w *wc) string { return "refs/heads/main:refs/heads/release/2" },
			want:   []string{"- Cannot create ref due to creations being restricted."},
			reason: "push declined due to repository rule violations",
		},
		{
			name: "ruleset with checks, linear history and signatures",
			setup: func(t *testing.T, e *env) {
				_, err := e.repo.AddRuleset(Ruleset{Include: []string{"main"}, RequiredChecks: []string{"ci"}, LinearHistory: true, SignedCommits: true})
				require.NoError(t, err)
			},
			change: func(t *testing.T, e *env, w *wc) string {
				base := w.head()
				w.commit("a.txt", "a")
				tip := w.head()
				merge := w.rawCommit(tip.TreeHash, []plumbing.Hash{base.Hash, tip.Hash}, "Merge", "")
				require.NoError(t, w.repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/merged", plumbing.NewHash(merge))))
				return "refs/heads/merged:refs/heads/main"
			},
			want: []string{"- Required status check \"ci\" is expected.", "- This branch must not contain merge commits.",
				"- Commits must have verified signatures."},
			reason: "push declined due to repository rule violations",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.f.AddToken(adminTok, owner, User)
			tc.setup(t, e)
			w := e.clone(t)
			spec := tc.change(t, e, w)
			dst := spec[strings.LastIndex(spec, ":")+1:]
			before, _ := e.repo.Ref(dst)
			tok := tc.tok
			if tok == "" {
				tok = botTok
			}
			err, progress := w.push(tok, spec)
			after, _ := e.repo.Ref(dst)
			if len(tc.want) == 0 {
				require.NoError(t, err, progress)
				assert.NotEqual(t, before, after, "the push moved %s", dst)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.reason)
			for _, l := range tc.want {
				assert.Contains(t, progress, l)
			}
			assert.Equal(t, before, after, "a refused push changes nothing")
		})
	}
}

// runGit runs the git CLI (an oracle in tests) in dir as the bot.
func runGit(t *testing.T, e *env, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "credential.helper=", "-c", "http.extraHeader=Authorization: Basic " +
		base64.StdEncoding.EncodeToString([]byte("x-access-token:"+botTok))}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(e.f.gitEnv(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestPushRefusedForEveryRef(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.repo.Protect("main", Protection{RequirePR: true}))
	w := e.clone(t)
	w.commit("a.txt", "a")
	err, _ := w.push(botTok, "refs/heads/main:refs/heads/main", "refs/heads/main:refs/heads/side")
	require.Error(t, err)
	_, ok := e.repo.Ref("refs/heads/side")
	assert.False(t, ok, "GitHub's hook refuses the whole push")
}

func TestGitCLIRulesetPush(t *testing.T) {
	e := newEnv(t)
	_, err := e.repo.AddRuleset(Ruleset{Include: []string{"~DEFAULT_BRANCH"}, RequirePR: true, RequiredChecks: []string{"ci"}})
	require.NoError(t, err)
	w := e.clone(t)
	w.commit("a.txt", "a")
	out, err := runGit(t, e, w.dir, "push", "origin", "HEAD:main")
	require.Error(t, err)
	assert.Contains(t, out, "remote: error: GH013: Repository rule violations found for refs/heads/main.")
	assert.Contains(t, out, "remote: - Changes must be made through a pull request.")
	assert.Contains(t, out, "remote: - Required status check \"ci\" is expected.")
	assert.Contains(t, out, "(push declined due to repository rule violations)")
}

func TestProtectionUnavailableOnFreePrivate(t *testing.T) {
	e := newEnv(t)
	s := e.repo.Settings()
	s.Private = true
	require.NoError(t, e.repo.SetSettings(s))
	err := e.repo.Protect("main", Protection{RequirePR: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), upgradeMessage)
	_, err = e.repo.AddRuleset(Ruleset{Include: []string{"~ALL"}, RequirePR: true})
	require.Error(t, err)

	// Rules set while public are kept but not enforced once private.
	s.Private = false
	require.NoError(t, e.repo.SetSettings(s))
	require.NoError(t, e.repo.Protect("main", Protection{RequirePR: true}))
	s.Private = true
	require.NoError(t, e.repo.SetSettings(s))
	w := e.clone(t)
	w.commit("a.txt", "a")
	err, progress := w.push(botTok, "refs/heads/main:refs/heads/main")
	require.NoError(t, err, progress)
	_, _, err = e.gh.Repositories.GetBranchProtection(e.ctx, owner, repoName, "main")
	assert.Equal(t, http.StatusForbidden, statusOf(err))
	assert.Equal(t, upgradeMessage, messageOf(err))

	// A paid plan has them.
	s.Plan = PlanPro
	require.NoError(t, e.repo.SetSettings(s))
	w.commit("b.txt", "b")
	err, _ = w.push(botTok, "refs/heads/main:refs/heads/main")
	require.Error(t, err)
}

func TestRefsAPIRules(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(t *testing.T, r *Repo)
		ref     string
		create  bool
		force   bool
		status  int
		message string
	}{
		{name: "unprotected update", setup: func(*testing.T, *Repo) {}, ref: "main", status: http.StatusOK},
		{name: "legacy ProtectBranch", setup: func(_ *testing.T, r *Repo) { r.ProtectBranch("main") }, ref: "main",
			status: http.StatusUnprocessableEntity, message: "Protected branch update failed for refs/heads/main."},
		{name: "required check", setup: func(t *testing.T, r *Repo) {
			require.NoError(t, r.Protect("main", Protection{RequiredChecks: []string{"ci"}}))
		}, ref: "main", status: http.StatusUnprocessableEntity, message: "Protected branch update failed for refs/heads/main."},
		{name: "ruleset restricting updates", setup: func(t *testing.T, r *Repo) {
			_, err := r.AddRuleset(Ruleset{Include: []string{"~DEFAULT_BRANCH"}, RestrictUpdates: true})
			require.NoError(t, err)
		}, ref: "main", status: http.StatusUnprocessableEntity,
			message: "Repository rule violations found\n\nCannot update this protected ref.\n\n"},
		{name: "ruleset restricting creations", setup: func(t *testing.T, r *Repo) {
			_, err := r.AddRuleset(Ruleset{Include: []string{"~ALL"}, RestrictCreations: true})
			require.NoError(t, err)
		}, ref: "new-branch", create: true, status: http.StatusUnprocessableEntity,
			message: "Repository rule violations found\n\nCannot create ref due to creations being restricted.\n\n"},
		{name: "claims refs are not branches", setup: func(_ *testing.T, r *Repo) { r.ProtectBranch("main") },
			ref: "bazinga/claims/x", create: true, status: http.StatusCreated},
		{name: "not a fast-forward", setup: func(*testing.T, *Repo) {}, ref: "main", force: false, status: http.StatusUnprocessableEntity,
			message: "Update is not a fast forward"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			tc.setup(t, e.repo)
			main, _ := e.repo.Ref("refs/heads/main")
			// A commit on top of main, and an unrelated one.
			next, err := e.repo.commitFiles(main, map[string]string{"n.txt": "n"}, "next", "alice")
			require.NoError(t, err)
			root, err := e.repo.commitFiles("", map[string]string{"r.txt": "r"}, "root", "alice")
			require.NoError(t, err)
			sha := next
			if tc.message == "Update is not a fast forward" {
				sha = root
			}
			full := "refs/heads/" + tc.ref
			if strings.HasPrefix(tc.ref, "bazinga/") {
				full = "refs/" + tc.ref
			}
			var resp *github.Response
			if tc.create {
				_, resp, err = e.gh.Git.CreateRef(e.ctx, owner, repoName, &github.Reference{Ref: github.String(full), Object: &github.GitObject{SHA: github.String(sha)}})
			} else {
				_, resp, err = e.gh.Git.UpdateRef(e.ctx, owner, repoName, &github.Reference{Ref: github.String(full), Object: &github.GitObject{SHA: github.String(sha)}}, tc.force)
			}
			if tc.message == "" {
				require.NoError(t, err)
				assert.Equal(t, tc.status, resp.StatusCode)
				if tc.create {
					assert.Equal(t, e.f.APIURL()+"repos/acme/widgets/git/"+full, resp.Header.Get("Location"))
				}
				got, _ := e.repo.Ref(full)
				assert.Equal(t, sha, got)
				return
			}
			assert.Equal(t, tc.status, statusOf(err))
			assert.Equal(t, tc.message, messageOf(err))
		})
	}
}

func TestBranchAndRulesEndpoints(t *testing.T) {
	e := newEnv(t)
	b, _, err := e.gh.Repositories.GetBranch(e.ctx, owner, repoName, "main", 0)
	require.NoError(t, err)
	assert.False(t, b.GetProtected())
	main, _ := e.repo.Ref("refs/heads/main")
	assert.Equal(t, main, b.GetCommit().GetSHA())

	require.NoError(t, e.repo.Protect("main", Protection{RequiredChecks: []string{"ci", "lint"}, Strict: true, RequiredApprovals: 1}))
	b, _, err = e.gh.Repositories.GetBranch(e.ctx, owner, repoName, "main", 0)
	require.NoError(t, err)
	assert.True(t, b.GetProtected())
	assert.Equal(t, &[]string{"ci", "lint"}, b.GetProtection().GetRequiredStatusChecks().Contexts)

	p, _, err := e.gh.Repositories.GetBranchProtection(e.ctx, owner, repoName, "main")
	require.NoError(t, err)
	assert.True(t, p.GetRequiredStatusChecks().Strict)
	assert.Equal(t, 1, p.GetRequiredPullRequestReviews().RequiredApprovingReviewCount)
	_, _, err = e.gh.Repositories.GetBranchProtection(e.ctx, owner, repoName, "feature")
	assert.ErrorIs(t, err, github.ErrBranchNotProtected, "go-github recognises GitHub's 404 message")

	_, resp, err := e.gh.Repositories.GetBranch(e.ctx, owner, repoName, "nope", 0)
	require.Error(t, err)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	// Rulesets: only active ones, for the branch named (which need not
	// exist), readable with contents:read.
	_, err = e.repo.AddRuleset(Ruleset{Name: "rel", Include: []string{"refs/heads/release/**"}, RequiredChecks: []string{"build"},
		RequirePR: true, RequiredApprovals: 2, AllowedMergeMethods: []string{"squash"}, LinearHistory: true, RestrictDeletions: true})
	require.NoError(t, err)
	_, err = e.repo.AddRuleset(Ruleset{Name: "eval", Include: []string{"~ALL"}, SignedCommits: true, Enforcement: EnforcementEvaluate})
	require.NoError(t, err)
	e.f.AddTokenWithPermissions("ghs_reader", e.f.BotLogin(), Bot, map[string]string{"contents": "read"})
	reader := e.f.Client("ghs_reader")
	rules, _, err := reader.Repositories.GetRulesForBranch(e.ctx, owner, repoName, "release/v1/x")
	require.NoError(t, err)
	var types []string
	for _, r := range rules {
		types = append(types, r.Type)
		assert.Equal(t, "acme/widgets", r.RulesetSource)
	}
	assert.Equal(t, []string{"deletion", "required_linear_history", "pull_request", "required_status_checks"}, types)
	rules, _, err = reader.Repositories.GetRulesForBranch(e.ctx, owner, repoName, "main")
	require.NoError(t, err)
	assert.Empty(t, rules, "the evaluate-mode ruleset is not listed")

	_, body := rawGet(t, e.f.APIURL()+"repos/acme/widgets/rules/branches/release/v1", "ghs_reader", nil)
	assert.Contains(t, string(body), `"allowed_merge_methods":["squash"]`)
	assert.Contains(t, string(body), `"required_approving_review_count":2`)
	assert.Contains(t, string(body), `"required_status_checks":[{"context":"build"}]`)

	// The protection endpoint needs administration permission.
	_, _, err = reader.Repositories.GetBranchProtection(e.ctx, owner, repoName, "main")
	assert.Equal(t, http.StatusForbidden, statusOf(err))
}

func TestFnmatch(t *testing.T) {
	cases := []struct {
		pat, name string
		want      bool
	}{
		{"main", "main", true},
		{"main", "main2", false},
		{"release/*", "release/1", true},
		{"release/*", "release/1/2", false},
		{"release/**", "release/1/2", true},
		{"**/hotfix", "a/b/hotfix", true},
		{"v[0-9]*", "v1.2", true},
		{"v[!0-9]*", "v1.2", false},
		{"feat?", "feat1", true},
		{"feat?", "feat/", false},
		{"*", "a/b", false},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, fnmatch(tc.pat, tc.name), "%s ~ %s", tc.pat, tc.name)
	}
}
