package stepexec

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/gitops"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// fakeHandOver records what would have been pushed; refuse, when set, is
// returned from Change.
type fakeHandOver struct {
	changes    []Change
	tested     [][2]plumbing.Hash
	refuse     error
	changedSet []string
}

func (f *fakeHandOver) Change(ctx context.Context, c Change) error {
	f.changes = append(f.changes, c)
	if f.refuse != nil {
		return f.refuse
	}
	ch, err := gitops.TreeChanges(c.Repo, c.Start, c.Head)
	if err != nil {
		return err
	}
	for _, x := range ch {
		f.changedSet = append(f.changedSet, x.Path+":"+x.Mode.String())
	}
	return nil
}

func (f *fakeHandOver) Tested(ctx context.Context, base, head plumbing.Hash) (gitops.FinishResult, error) {
	f.tested = append(f.tested, [2]plumbing.Hash{base, head})
	return gitops.FinishResult{Outcome: gitops.MergeSuccess}, nil
}

func remoteHas(t *testing.T, bare, ref string) bool {
	return exec.Command("git", "-C", bare, "rev-parse", "--verify", "-q", ref).Run() == nil
}

// In hand-over mode an agent step writes nothing to the remote: not even
// the group branch is created; its commit goes to the HandOver, starting
// from the base head the branch would have been created at.
func TestHandOverModePushesNothing(t *testing.T) {
	f := newFixture(t, pipeline.RoleDeveloper)
	e := f.exec(t, `echo hi > hello.txt; echo '{"status":"READY_FOR_QA","summary":["hello"]}'`)
	ho := &fakeHandOver{}
	e.HandOver = ho
	main := gitCLI(t, f.bare, "rev-parse", "main")
	ev, rep := e.Run(context.Background(), f.s, f.s.Groups[0].InFlight)
	require.Equal(t, pipeline.EventStepResult, ev.Kind, ev.Reason)
	assert.Equal(t, pipeline.StatusReadyForQA, ev.Result.Status, "the harness's test check ran and passed")
	assert.NotEmpty(t, rep.Tests)
	require.Len(t, ho.changes, 1)
	c := ho.changes[0]
	assert.Equal(t, "bazinga/s1-A", c.Branch)
	assert.Equal(t, main, c.Start.String())
	assert.False(t, c.BranchExisted)
	assert.True(t, c.MergeParent.IsZero())
	assert.Equal(t, []string{"hello.txt:file"}, ho.changedSet)
	assert.False(t, remoteHas(t, f.bare, "refs/heads/bazinga/s1-A"), "no branch was created on the remote")
	assert.Equal(t, main, gitCLI(t, f.bare, "rev-parse", "main"))
}

// A change the HandOver refuses is a revision, as a refused push is.
func TestHandOverRefusalIsARevision(t *testing.T) {
	for _, refusal := range []error{
		fmt.Errorf("%w: .github/bazinga.yml", gitops.ErrForbiddenPath),
		fmt.Errorf("%w: vendor/x", gitops.ErrSubmodule),
		fmt.Errorf("%w: .github/workflows/x.yml", gitops.ErrWorkflowChange),
	} {
		f := newFixture(t, pipeline.RoleDeveloper)
		e := f.exec(t, `mkdir -p .github; echo x > .github/bazinga.yml; echo 'Status: READY_FOR_REVIEW'`)
		e.HandOver = &fakeHandOver{refuse: refusal}
		ev, _ := e.Run(context.Background(), f.s, f.s.Groups[0].InFlight)
		require.Equal(t, pipeline.EventStepResult, ev.Kind, ev.Reason)
		assert.Equal(t, pipeline.StatusPartial, ev.Result.Status)
		assert.Contains(t, ev.Result.Summary[0], refusal.Error())
	}
}

// In hand-over mode the merge gate tests merge(base, head) and hands the
// two heads over; the base is not touched.
func TestHandOverMergeIsTestedNotLanded(t *testing.T) {
	f := newFixture(t, pipeline.RoleMerge)
	work := t.TempDir()
	gitCLI(t, work, "clone", "-q", f.bare, ".")
	gitCLI(t, work, "checkout", "-q", "-b", "bazinga/s1-A")
	require.NoError(t, os.WriteFile(filepath.Join(work, "a.txt"), []byte("a\n"), 0o644))
	gitCLI(t, work, "add", "-A")
	gitCLI(t, work, "commit", "-q", "-m", "A")
	gitCLI(t, work, "push", "-q", "origin", "bazinga/s1-A")
	main := gitCLI(t, f.bare, "rev-parse", "main")
	head := gitCLI(t, f.bare, "rev-parse", "bazinga/s1-A")
	e := f.exec(t, "")
	ho := &fakeHandOver{}
	e.HandOver = ho
	ev, rep := e.Run(context.Background(), f.s, f.s.Groups[0].InFlight)
	require.Equal(t, pipeline.EventStepResult, ev.Kind, ev.Reason)
	assert.Equal(t, pipeline.StatusMergeSuccess, ev.Result.Status)
	assert.NotEmpty(t, rep.Tests, "the gate ran")
	require.Len(t, ho.tested, 1)
	assert.Equal(t, [2]string{main, head}, [2]string{ho.tested[0][0].String(), ho.tested[0][1].String()})
	assert.Equal(t, main, gitCLI(t, f.bare, "rev-parse", "main"), "nothing landed")
}
