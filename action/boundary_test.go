package action_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/bazinga-bot/bazinga/internal/e2eworld"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/action/stepjob"
	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/gitops"
	"github.com/bazinga-bot/bazinga/internal/ghfake"
)

// The attacks on the trust boundary (SECURITY.md lists them with their
// outcome): a hand-over the privileged job must refuse, and code in a
// hand-over it must never run. The agent job runs for real (the scripted
// agent, the harness's test check, go-git against the fake GitHub); the
// attacker then edits the hand-over between the jobs, as an agent that
// outlives its step, or that holds the job's runtime token, could.

// groupStep plays the pm step of the unit session (agent, then publish),
// then the unprivileged job of group A's first developer step, and returns
// that step's run, its environment's hand-over directory and its env.
func groupStep(t *testing.T, u *unit, agentCmd string) (ghfake.Run, map[string]string) {
	t.Helper()
	tok := u.writeToken(u.Run)
	r := u.action(u.Env(map[string]string{"command": "agent", "step": "1/_/pm/1", "github-token": u.readToken(), "agent-command": agentCmd}))
	require.Equal(t, 0, r.code, r.stdout)
	r = u.action(u.Env(map[string]string{"command": "publish", "step": "1/_/pm/1", "github-token": tok}))
	require.Equal(t, 0, r.code, r.stdout)
	require.NoError(t, u.F.WaitWebhooks(10*time.Second))
	var run ghfake.Run
	for _, x := range u.F.Runs() {
		if strings.HasPrefix(x.Inputs["step"], "1/A/developer/") {
			run = x
		}
	}
	require.NotZero(t, run.ID, "group A's developer step is dispatched")
	u.Run = run
	env := u.Env(map[string]string{"command": "agent", "step": run.Inputs["step"], "github-token": u.readToken(), "agent-command": agentCmd})
	r = u.action(env)
	require.Equal(t, 0, r.code, r.stdout)
	return run, env
}

// stepPublished reports what the privileged job left: the group branch
// head, whether the step is claimed, and its result comments anywhere.
func (u *unit) published(step string) (head string, claimed bool, results int) {
	head, _ = u.Repo.Ref("refs/heads/bazinga/1-A")
	for _, n := range append([]int{u.issue}, prNumbers(u.Repo)...) {
		for _, c := range u.Repo.Comments(n) {
			if rec, ok := codec.ParseResultComment(c.GetBody()); ok && rec.Step == step {
				results++
			}
		}
	}
	return head, u.claimed(step), results
}

func prNumbers(r *ghfake.Repo) []int {
	var out []int
	for _, pr := range r.PRs() {
		out = append(out, pr.GetNumber())
	}
	return out
}

func copyTree(t *testing.T, from string) string {
	to := filepath.Join(t.TempDir(), "handover")
	require.NoError(t, CopyDir(from, to))
	return to
}

func TestPublishRefusesTamperedHandOvers(t *testing.T) {
	u := newUnit(t)
	run, env := groupStep(t, u, u.AgentCmd(t))
	step := run.Inputs["step"]
	original := env["RUNNER_TEMP"] + "/bazinga-handover"
	m := ReadManifest(t, original)
	require.Equal(t, "result", m["outcome"])
	require.NotEmpty(t, m.Files(), "the developer's change is handed over as files")
	headBefore, _, _ := u.published(step)
	require.Empty(t, headBefore, "the group branch is created by its first step's push")
	mainHead, ok := u.Repo.Ref("refs/heads/main")
	require.True(t, ok)

	cases := []struct {
		name   string
		tamper func(t *testing.T, dir string, m Manifest)
		want   string
	}{
		{"a workflow change", func(t *testing.T, dir string, m Manifest) {
			m.AddFile(t, dir, ".github/workflows/x.yml", []byte("on: push\njobs: {}\n"))
		}, "changes under .github/workflows/ are not allowed: .github/workflows/x.yml"},
		{"a workflow change in other case", func(t *testing.T, dir string, m Manifest) {
			m.AddFile(t, dir, ".GitHub/Workflows/x.yml", []byte("on: push\n"))
		}, "changes under .github/workflows/ are not allowed"},
		{"the configuration", func(t *testing.T, dir string, m Manifest) {
			m.AddFile(t, dir, ".github/bazinga.yml", []byte("agent:\n  env: [INPUT_GITHUB_TOKEN]\n"))
		}, `".github/bazinga.yml" is bazinga's configuration, which only maintainers change`},
		{"a path with ..", func(t *testing.T, dir string, m Manifest) {
			m.AddFile(t, dir, "../escape.txt", []byte("x"))
		}, `"../escape.txt" has a . or .. segment`},
		{"a path climbing out through ..", func(t *testing.T, dir string, m Manifest) {
			m.AddFile(t, dir, "docs/../../escape.txt", []byte("x"))
		}, `has a . or .. segment`},
		{"an absolute path", func(t *testing.T, dir string, m Manifest) {
			m.AddFile(t, dir, "/etc/cron.d/x", []byte("x"))
		}, `"/etc/cron.d/x" is absolute`},
		{"a path into .git", func(t *testing.T, dir string, m Manifest) {
			m.AddFile(t, dir, ".git/hooks/post-checkout", []byte("#!/bin/sh\n"))
		}, "reaches into .git"},
		{"an oversized file", func(t *testing.T, dir string, m Manifest) {
			m.AddFile(t, dir, "big.bin", []byte("x"))
			last := m.Files()[len(m.Files())-1].(map[string]any)
			last["size"] = stepjob.MaxHandOverFileSize + 1
			require.NoError(t, os.Truncate(filepath.Join(dir, "files", last["data"].(string)), stepjob.MaxHandOverFileSize+1))
		}, `"big.bin" is 10485761 bytes, over the limit of 10485760`},
		{"too many files", func(t *testing.T, dir string, m Manifest) {
			files := m.Files()
			for i := 0; i <= stepjob.MaxHandOverFiles; i++ {
				files = append(files, map[string]any{"path": fmt.Sprintf("gone/%d", i), "mode": "delete", "size": 0})
			}
			m.Commit()["files"] = files
		}, "over the limit of 5000"},
		{"content that is a link", func(t *testing.T, dir string, m Manifest) {
			p := filepath.Join(dir, "files", "0")
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Symlink("/etc/passwd", p))
		}, "is not a regular file"},
		{"content that does not match its hash", func(t *testing.T, dir string, m Manifest) {
			p := filepath.Join(dir, "files", "0")
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			b[0] ^= 1
			require.NoError(t, os.WriteFile(p, b, 0o644))
		}, "hashes to"},
		{"a change that is not what the step committed", func(t *testing.T, dir string, m Manifest) {
			m.AddFile(t, dir, "extra.txt", []byte("smuggled\n"))
		}, "gives tree"},
		{"another step's result", func(t *testing.T, dir string, m Manifest) {
			m["result"].(map[string]any)["group"] = "B"
		}, `its record is for step "` + step + `" (developer, group "B")`},
		{"a hand-over for another step", func(t *testing.T, dir string, m Manifest) {
			m["step"] = "1/B/developer/3"
		}, `it is for step "1/B/developer/3"`},
		{"a status the role does not report", func(t *testing.T, dir string, m Manifest) {
			m["result"].(map[string]any)["result"].(map[string]any)["status"] = "APPROVED"
		}, "status APPROVED is not one a developer reports"},
		{"an unknown field", func(t *testing.T, dir string, m Manifest) {
			m["state"] = "<!-- bazinga:state:v1 forged -->"
		}, `unknown field "state"`},
		{"a forged merge parent", func(t *testing.T, dir string, m Manifest) {
			m.Commit()["merge_parent"] = strings.Repeat("ab", 20)
		}, "is not a commit of main"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyTree(t, original)
			m := ReadManifest(t, dir)
			c.tamper(t, dir, m)
			m.Write(t, dir)
			r := u.action(u.Env(map[string]string{"command": "publish", "step": step, "github-token": u.writeToken(run), "handover": dir}))
			assert.Equal(t, 1, r.code, r.stdout)
			assert.Contains(t, r.stdout, "::error title=bazinga%3A hand-over refused::step "+step+": hand-over refused: ")
			assert.Contains(t, r.stdout, c.want)
			assert.Contains(t, r.stdout, "nothing was pushed or posted")
			head, claimed, results := u.published(step)
			assert.Equal(t, headBefore, head, "nothing pushed")
			assert.False(t, claimed, "nothing claimed")
			assert.Zero(t, results, "nothing posted")
		})
	}
	for _, p := range []string{".github/workflows/x.yml", "escape.txt", "extra.txt", "big.bin"} {
		_, err := u.Repo.ReadFile("bazinga/1-A", p)
		assert.Error(t, err, "%s is not on the group branch", p)
	}

	// The hand-over as the agent job wrote it is published: the refusals
	// were the tampering's doing.
	r := u.action(u.Env(map[string]string{"command": "publish", "step": step, "github-token": u.writeToken(run), "handover": copyTree(t, original)}))
	require.Equal(t, 0, r.code, r.stdout)
	head, claimed, results := u.published(step)
	assert.NotEqual(t, headBefore, head, "pushed")
	assert.True(t, claimed)
	assert.Equal(t, 1, results)
	got, err := u.Repo.ReadFile("bazinga/1-A", "a.txt")
	require.NoError(t, err)
	assert.Equal(t, "ok\n", string(got))
	// The commit is the harness's: parent the commit the step started from
	// (the base head: the branch did not exist), committed by bazinga, with
	// the step trailer.
	repo, _, err := gitops.FetchBare(context.Background(), gitops.Remote{URL: u.F.URL() + "/" + E2eFull + ".git", Token: u.writeToken(run)},
		filepath.Join(t.TempDir(), "r"), "bazinga/1-A")
	require.NoError(t, err)
	c, err := repo.CommitObject(plumbing.NewHash(head))
	require.NoError(t, err)
	require.Len(t, c.ParentHashes, 1)
	assert.Equal(t, mainHead, c.ParentHashes[0].String(), "a new group branch starts on the base")
	assert.Equal(t, gitops.BotIdentity.Name, c.Committer.Name)
	assert.Contains(t, c.Message, "Bazinga-Step: "+step)
}

// A hand-over whose base is no longer the group branch head is stale: it
// is refused, and the human's commit stays.
func TestPublishRefusesAStaleBase(t *testing.T) {
	u := newUnit(t)
	run, env := groupStep(t, u, u.AgentCmd(t))
	step := run.Inputs["step"]
	human, err := u.Repo.Push("alice", "bazinga/1-A", map[string]string{"human.txt": "ok\n"}, "a human pushes meanwhile")
	require.NoError(t, err)
	r := u.action(u.Env(map[string]string{"command": "publish", "step": step, "github-token": u.writeToken(run), "handover": env["RUNNER_TEMP"] + "/bazinga-handover"}))
	assert.Equal(t, 1, r.code, r.stdout)
	assert.Contains(t, r.stdout, "hand-over refused: stale: the step started from bazinga/1-A at ")
	assert.Contains(t, r.stdout, "but bazinga/1-A is now at "+human[:12])
	head, claimed, results := u.published(step)
	assert.Equal(t, human, head)
	assert.False(t, claimed)
	assert.Zero(t, results)

	// A hand-over naming a base that is not the branch head is stale too.
	dir := copyTree(t, env["RUNNER_TEMP"]+"/bazinga-handover")
	m := ReadManifest(t, dir)
	m["base"] = human
	m.Write(t, dir)
	r = u.action(u.Env(map[string]string{"command": "publish", "step": step, "github-token": u.writeToken(run), "handover": dir}))
	assert.Equal(t, 1, r.code, r.stdout)
	assert.Contains(t, r.stdout, "gives tree", "rebuilt on the human's head, the change is not what the step committed")
	head, claimed, _ = u.published(step)
	assert.Equal(t, human, head)
	assert.False(t, claimed)
}

// The privileged job runs nothing from the repository: a change carrying a
// test script and a Makefile that would leave a marker if run is published,
// and the marker does not move. The same script does run in the
// unprivileged job (the harness's test check), which proves it would.
func TestPublishRunsNoRepositoryCode(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker")
	script := fmt.Sprintf("#!/bin/sh\necho ran >> '%s'\nexit 0\n", marker)
	mk := fmt.Sprintf("all:\n\techo make >> '%s'\n", marker)
	scenario := fmt.Sprintf(`{"requirements": "x", "steps": {
 "_/pm": [{"status": "PLANNING_COMPLETE", "summary": ["1 group"], "handoff": {"plan": {"mode": "simple", "groups": [
   {"id": "A", "name": "a", "task": "t", "phase": 1}], "success_criteria": ["ok"]}}}],
 "A/developer": [{"status": "READY_FOR_QA", "summary": ["scripts"], "write": {"test.sh": %q, "Makefile": %q, "a.txt": "ok\n",
   ".gitattributes": "*.txt filter=run\n"}}]}}`, script, mk)
	// The base has neither script, so its baseline is red: accepted, so the
	// session goes on (and the pm job's baseline travels through publish).
	config := "agent:\n  command: x\n  timeout: 1m\ntests:\n  command: 'sh ./test.sh'\n  timeout: 1m\n  baseline: accept\nbuild:\n  command: 'make -s'\n"
	u := newUnitWith(t, config)
	sc := filepath.Join(dir, "scenario.json")
	require.NoError(t, os.WriteFile(sc, []byte(scenario), 0o644))
	exe, err := os.Executable()
	require.NoError(t, err)
	agentCmd := "'" + exe + "' scripted-agent --scenario '" + sc + "' --state '" + filepath.Join(dir, "state") + "'"

	run, env := groupStep(t, u, agentCmd)
	step := run.Inputs["step"]
	ran, err := os.ReadFile(marker)
	require.NoError(t, err, "the unprivileged job ran the build and the tests")
	assert.Equal(t, "make\nran\n", string(ran))

	r := u.action(u.Env(map[string]string{"command": "publish", "step": step, "github-token": u.writeToken(run), "handover": env["RUNNER_TEMP"] + "/bazinga-handover"}))
	require.Equal(t, 0, r.code, r.stdout)
	after, err := os.ReadFile(marker)
	require.NoError(t, err)
	assert.Equal(t, string(ran), string(after), "the publish job ran nothing from the repository")
	got, err := u.Repo.ReadFile("bazinga/1-A", "test.sh")
	require.NoError(t, err)
	assert.Equal(t, script, string(got), "the scripts are published, as data")

	// The pm job's baseline (the base has no Makefile: red, without names)
	// went through its hand-over and result comment into the session.
	var body string
	for _, c := range u.Repo.Comments(u.issue) {
		if strings.Contains(c.GetBody(), "bazinga:state:v1") {
			body = c.GetBody()
		}
	}
	st, _, err := codec.FindState([]ghapi.Comment{{ID: 1, Author: u.F.BotLogin(), AuthorType: "Bot", Body: body}},
		ghapi.RepoRef{Owner: E2eOwner, Name: E2eName}, u.issue, codec.StateTrust{PublicKey: E2ePublicKey, Authors: []string{u.F.BotLogin()}})
	require.NoError(t, err)
	require.NotNil(t, st.Session.Baseline)
	assert.False(t, st.Session.Baseline.Green)
	assert.True(t, st.Session.Baseline.Unnamed)
	assert.Equal(t, "tests.baseline: accept", st.Session.Baseline.AcceptedBy)
	main, _ := u.Repo.Ref("refs/heads/main")
	assert.Equal(t, main, st.Session.Baseline.Commit)
}

// The unprivileged job's token cannot write: whatever the agent reads from
// its job, it cannot push, claim or post with it.
func TestReadTokenCannotWrite(t *testing.T) {
	u := newUnit(t)
	ro := u.readToken()
	ctx := context.Background()
	main, _ := u.Repo.Ref("refs/heads/main")
	c := u.F.Client(ro)
	_, _, err := c.Git.CreateRef(ctx, E2eOwner, E2eName, &github.Reference{Ref: github.String("refs/heads/pwned"), Object: &github.GitObject{SHA: github.String(main)}})
	assert.ErrorContains(t, err, "403")
	_, _, err = c.Issues.CreateComment(ctx, E2eOwner, E2eName, u.issue, &github.IssueComment{Body: github.String("pwned")})
	assert.ErrorContains(t, err, "403")
	// git push with it is refused by the server.
	repo, heads, err := gitops.FetchBare(ctx, gitops.Remote{URL: u.F.URL() + "/" + E2eFull + ".git", Token: ro}, filepath.Join(t.TempDir(), "r"), "main")
	require.NoError(t, err, "it can read")
	commit, _, err := gitops.CommitFiles(repo, []gitops.NewFile{{Path: "pwned.md", Mode: gitops.ChangeFile, Data: []byte("x")}},
		gitops.CommitSpec{Parents: []plumbing.Hash{heads["main"]}, Message: "pwned"})
	require.NoError(t, err)
	err = gitops.PushCommit(ctx, repo, gitops.Remote{URL: u.F.URL() + "/" + E2eFull + ".git", Token: ro}, commit, "main", heads["main"])
	assert.ErrorContains(t, err, "denied")
	after, _ := u.Repo.Ref("refs/heads/main")
	assert.Equal(t, main, after)
}

// One whole session, end to end, under two attacks at once (a session
// each would double the suite's time):
//
// The agent reads every environment it can: its own, its parent's
// (/proc/$PPID/environ, where the old one-job shape left the write token)
// and every /proc/*/environ it may open, and writes them into its working
// copy, which the step then publishes. No write token appears anywhere the
// agent could read, while the read-only token of its own job does (so the
// dump did reach its parent).
//
// Between the gate and the land job, the attacker swaps the tested tree in
// the hand-over (first merge), then main moves under the second merge (a
// human pushes). Both land jobs refuse, naming the problem, and push
// nothing; the orchestrator retries each merge as a new step, whose gate
// tests what is there now, and the session still ends verified.
func TestE2EBoundaryUnderAttack(t *testing.T) {
	var dumps, human string
	var refused []string
	w, s := PlayAppModeWith(t, E2eConfig, func(w *World) {
		dumps = filepath.Join(w.Root, "dumps")
		require.NoError(t, os.MkdirAll(dumps, 0o755))
		script := filepath.Join(w.Root, "dump-agent.sh")
		require.NoError(t, os.WriteFile(script, []byte(`#!/bin/sh
out=env-dump.log
{
  echo "== self"; tr '\0' '\n' < /proc/self/environ
  echo "== parent $PPID"; tr '\0' '\n' < /proc/$PPID/environ
  for f in /proc/[0-9]*/environ; do echo "== $f"; tr '\0' '\n' < "$f"; done
} > "$out" 2>/dev/null
cp "$out" '`+dumps+`'/$$.log
exec "$@"
`), 0o755))
		w.AgentCmd = "sh '" + script + "' " + w.AgentCmd
		// A secret of the agent job, as the model key is.
		w.Secrets["ANTHROPIC_API_KEY"] = "sk-test-model-key" // the file gives it to the agent job only
		// On GitHub each job is its own VM; here they share one machine,
		// so they run one at a time: an agent sees its own job only.
		w.Serial = true

		w.ExpectFail = map[int64]bool{}
		merges := 0
		w.BeforePublish = func(r ghfake.Run, dir string) {
			if !strings.Contains(r.Inputs["step"], "/merge/") {
				return
			}
			m := ReadManifest(t, dir)
			if m["merge"] == nil {
				return
			}
			merges++
			switch merges {
			case 1:
				m["merge"].(map[string]any)["tree"] = strings.Repeat("1", 40)
				m.Write(t, dir)
			case 2:
				sha, err := w.Repo.Push("alice", "main", map[string]string{"human.txt": "ok\n"}, "a human pushes to main")
				require.NoError(t, err)
				human = sha
			default:
				return
			}
			w.Mu.Lock()
			w.ExpectFail[r.ID] = true
			w.Mu.Unlock()
			refused = append(refused, r.Inputs["step"])
		}
	})

	t.Run("no write token within the agent's reach", func(t *testing.T) {
		entries, err := os.ReadDir(dumps)
		require.NoError(t, err)
		require.NotEmpty(t, entries, "the agents dumped what they could read")
		var all strings.Builder
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(dumps, e.Name()))
			require.NoError(t, err)
			all.Write(b)
		}
		// Other test binaries run beside this one on a shared machine (the
		// end-to-end tests are in two packages), and /proc shows their jobs'
		// processes too. On GitHub each job is its own VM: only this
		// world's processes, and those of no world, are within the agent's
		// reach.
		text := ownProcesses(all.String(), "GITHUB_SERVER_URL="+w.F.URL()+"\n")
		writes, reads := 0, 0
		for _, j := range w.JobsCopy() {
			switch j.Command {
			case "publish", "land", "reconcile":
				writes++
				assert.NotContains(t, text, j.Token, "the write token of run %d (%s)", j.Run.ID, j.Command)
			case "agent":
				reads++
			}
		}
		assert.Positive(t, writes)
		assert.Positive(t, reads)
		assert.Contains(t, text, "INPUT_GITHUB-TOKEN=ghs_ro", "the dump reached the agent's parent, which holds only the read token")
		assert.Contains(t, text, "sk-test-model-key", "and the model key the agent is given")
		// No write token of any run (the fake mints ghs_rw… for every job
		// whose permissions write). Compared token by token rather than by
		// prefix: on a shared machine /proc shows other test binaries,
		// whose fakes mint tokens with the same prefix.
		for _, j := range w.JobsCopy() {
			if strings.HasPrefix(j.Token, "ghs_rw") {
				assert.NotContains(t, text, j.Token, "no write token of any run: %s of run %d", j.Job, j.Run.ID)
			}
		}
		assert.NotContains(t, text, E2eBotTok, "not the App's token")
		assert.NotContains(t, text, E2eActionSecret, "not the Action-only state secret")
		assert.NotContains(t, text, hex.EncodeToString(E2eSigningKey.Seed()), "not the App's signing key")
		// The dump was published as the agent's work, as data.
		b, err := w.Repo.ReadFile("main", "env-dump.log")
		require.NoError(t, err)
		for _, j := range w.JobsCopy() {
			if strings.HasPrefix(j.Token, "ghs_rw") {
				assert.NotContains(t, string(b), j.Token)
			}
		}
	})

	t.Run("land refuses what was not tested", func(t *testing.T) {
		require.Len(t, refused, 2)
		outputs := map[string]string{}
		for _, j := range w.JobsCopy() {
			if j.Command == "land" {
				outputs[j.Run.Inputs["step"]] = j.Output
			}
		}
		assert.Contains(t, outputs[refused[0]], "hand-over refused: merging bazinga/1-")
		assert.Contains(t, outputs[refused[0]], "not the tested 111111111111")
		assert.Contains(t, outputs[refused[1]], "hand-over refused: stale: the gate tested main at")
		assert.Contains(t, outputs[refused[1]], "they are now at "+human[:12])
		for _, id := range refused {
			st := s.Step(id)
			require.NotNil(t, st)
			assert.NotEqual(t, "done", st.State.String(), "a refused merge is not done: it was retried")
			_, claimed := w.Repo.Ref(stepjob.ClaimRef(id))
			assert.False(t, claimed, "a refused merge is not claimed")
		}
		got, err := w.Repo.ReadFile("main", "human.txt")
		require.NoError(t, err)
		assert.Equal(t, "ok\n", string(got), "the human's commit stays")
	})
}

// ownProcesses keeps the sections of an environment dump ("== <source>"
// then its variables) that are not another fake's jobs: those naming a
// GITHUB_SERVER_URL other than own are left out.
func ownProcesses(dump, own string) string {
	var out strings.Builder
	for _, sec := range strings.SplitAfter(dump, "\n== ") {
		if strings.Contains(sec, "GITHUB_SERVER_URL=") && !strings.Contains(sec, own) {
			continue
		}
		out.WriteString(sec)
	}
	return out.String()
}
