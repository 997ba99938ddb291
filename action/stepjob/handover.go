package stepjob

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/gitops"
)

// The hand-over is what a step's unprivileged job (agent, gate, validate)
// gives the privileged job that publishes it (publish, land), as a
// directory the workflow carries between them as an artifact:
//
//	handover.json   the manifest (HandOver)
//	files/<n>       the content of the manifest's n-th changed file
//
// The change travels as data — paths, modes, contents, deletions — not as
// git objects: the privileged job builds the commit itself on top of the
// branch head it reads from GitHub, so it never parses an object graph the
// agent could have crafted (gitlinks, odd tree entries, forged parents or
// authors), and nothing in the directory is named by a repository path or
// is ever executed. The privileged job reads it as untrusted input: see
// readHandOver for the checks.

// HandOverVersion is the manifest's format version.
const HandOverVersion = 1

// HandOverManifest is the manifest's file name.
const HandOverManifest = "handover.json"

// Limits on a hand-over, checked before anything is read into memory.
const (
	MaxHandOverManifest = 8 << 20   // bytes of handover.json
	MaxHandOverFiles    = 5000      // changed paths
	MaxHandOverFileSize = 10 << 20  // bytes of one file
	MaxHandOverTotal    = 100 << 20 // bytes of all files
)

// Hand-over outcomes.
const (
	OutcomeResult    = "result"    // the step has a result to publish
	OutcomeFailure   = "failure"   // the step ended without a result
	OutcomeSkipped   = "skipped"   // the step was not in flight
	OutcomeDuplicate = "duplicate" // another run already published the step
)

// HandOver is the manifest.
type HandOver struct {
	Version int    `json:"version"`
	Step    string `json:"step"`
	// Command is the unprivileged job's command: agent, gate or validate.
	Command string `json:"command"`
	Outcome string `json:"outcome"`
	// Why explains skipped.
	Why     string               `json:"why,omitempty"`
	Result  *codec.ResultRecord  `json:"result,omitempty"`
	Failure *codec.FailureRecord `json:"failure,omitempty"`
	// Base is the commit the step started from: the group branch head for a
	// group's agent step (the base branch head when the group branch did not
	// exist yet: BranchExisted false), the base branch head otherwise.
	Base          string `json:"base,omitempty"`
	BranchExisted bool   `json:"branch_existed,omitempty"`
	// Commit is an agent step's change, when it made one.
	Commit *HandOverCommit `json:"commit,omitempty"`
	// Merge is what a merge gate tested and passed.
	Merge *HandOverMerge `json:"merge,omitempty"`
}

// HandOverCommit is a change as data.
type HandOverCommit struct {
	// MergeParent is the base commit merged into the group (a conflict fix).
	MergeParent string         `json:"merge_parent,omitempty"`
	Files       []HandOverFile `json:"files"`
	// Tree is the tree the unprivileged job committed; the privileged job
	// rebuilds it from Files and must arrive at the same hash.
	Tree string `json:"tree"`
}

// HandOverFile is one changed path.
type HandOverFile struct {
	Path string `json:"path"`
	// Mode: file, executable, symlink (the content is the target) or delete.
	Mode string `json:"mode"`
	// Data names the content under files/: the entry's index.
	Data string `json:"data,omitempty"`
	Size int64  `json:"size"`
	// Blob is the content's git blob hash.
	Blob string `json:"blob,omitempty"`
}

// HandOverMerge is a tested merge: the two heads and the merged tree.
type HandOverMerge struct {
	Base string `json:"base"`
	Head string `json:"head"`
	Tree string `json:"tree"`
}

// HandOverError is a hand-over the privileged job refuses.
type HandOverError struct{ Problem string }

func (e *HandOverError) Error() string { return "hand-over refused: " + e.Problem }

func refuse(format string, args ...any) error {
	return &HandOverError{Problem: fmt.Sprintf(format, args...)}
}

// writeHandOver writes h into dir (created; emptied first), with the
// content of each changed file read by content(i).
func writeHandOver(dir string, h HandOver, content func(i int) ([]byte, error)) error {
	if dir == "" {
		return errors.New("no hand-over directory: set the `handover` input")
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clearing the hand-over directory: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "files"), 0o755); err != nil {
		return fmt.Errorf("making the hand-over directory: %w", err)
	}
	h.Version = HandOverVersion
	if h.Commit != nil {
		for i := range h.Commit.Files {
			f := &h.Commit.Files[i]
			if f.Mode == gitops.ChangeDelete.String() {
				continue
			}
			b, err := content(i)
			if err != nil {
				return fmt.Errorf("hand-over of %s: %w", f.Path, err)
			}
			f.Data = strconv.Itoa(i)
			if err := os.WriteFile(filepath.Join(dir, "files", f.Data), b, 0o644); err != nil {
				return fmt.Errorf("hand-over of %s: %w", f.Path, err)
			}
		}
	}
	b, err := json.MarshalIndent(h, "", " ")
	if err != nil {
		return fmt.Errorf("encoding the hand-over: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, HandOverManifest), append(b, '\n'), 0o644)
}

// readRegular reads a regular file (not a link, not a device) of at most
// limit bytes.
func readRegular(p string, limit int64) ([]byte, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", filepath.Base(p), fi.Mode().Type())
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, over the limit of %d", filepath.Base(p), fi.Size(), limit)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s grew over the limit of %d bytes", filepath.Base(p), limit)
	}
	return b, nil
}

// readHandOver reads and checks a hand-over as untrusted data: the
// manifest's size and fields (unknown fields refused), and for a change the
// number of files, every path (PathPolicy: relative, no .., no .git, no
// workflow change unless allowed, never the configuration), each file's
// size and blob hash, and the total size. The returned files are the change
// ready for gitops.CommitFiles.
func readHandOver(dir string, policy gitops.PathPolicy) (HandOver, []gitops.NewFile, error) {
	var h HandOver
	if dir == "" {
		return h, nil, refuse("no hand-over directory: set the `handover` input to where the artifact was downloaded")
	}
	raw, err := readRegular(filepath.Join(dir, HandOverManifest), MaxHandOverManifest)
	if errors.Is(err, os.ErrNotExist) {
		return h, nil, refuse("%s has no %s: did the unprivileged job of this step upload its hand-over?", dir, HandOverManifest)
	}
	if err != nil {
		return h, nil, refuse("the manifest: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return h, nil, refuse("the manifest is not valid: %v", err)
	}
	if dec.More() {
		return h, nil, refuse("the manifest has data after its JSON object")
	}
	if h.Version != HandOverVersion {
		return h, nil, refuse("the manifest's version is %d; this bazinga reads version %d", h.Version, HandOverVersion)
	}
	switch h.Outcome {
	case OutcomeResult:
		if h.Result == nil || h.Failure != nil {
			return h, nil, refuse("outcome result needs a result record and no failure record")
		}
	case OutcomeFailure:
		if h.Failure == nil || h.Result != nil || h.Commit != nil || h.Merge != nil {
			return h, nil, refuse("outcome failure carries a failure record only")
		}
	case OutcomeSkipped, OutcomeDuplicate:
		if h.Result != nil || h.Failure != nil || h.Commit != nil || h.Merge != nil {
			return h, nil, refuse("outcome %s carries no record", h.Outcome)
		}
	default:
		return h, nil, refuse("unknown outcome %q", h.Outcome)
	}
	if h.Base != "" && !isHash(h.Base) {
		return h, nil, refuse("base %q is not a commit hash", h.Base)
	}
	if m := h.Merge; m != nil {
		if !isHash(m.Base) || !isHash(m.Head) || !isHash(m.Tree) {
			return h, nil, refuse("the tested merge names %q, %q and tree %q: not all hashes", m.Base, m.Head, m.Tree)
		}
	}
	if h.Commit == nil {
		return h, nil, nil
	}
	c := h.Commit
	if c.MergeParent != "" && !isHash(c.MergeParent) {
		return h, nil, refuse("merge parent %q is not a commit hash", c.MergeParent)
	}
	if !isHash(c.Tree) {
		return h, nil, refuse("tree %q is not a hash", c.Tree)
	}
	if len(c.Files) > MaxHandOverFiles {
		return h, nil, refuse("the change has %d files, over the limit of %d", len(c.Files), MaxHandOverFiles)
	}
	seen := map[string]bool{}
	var total int64
	files := make([]gitops.NewFile, 0, len(c.Files))
	for i, f := range c.Files {
		if err := policy.Check(f.Path); err != nil {
			// A protected path may only take what the merged base commit
			// has there; prepare checks that once it has fetched the base.
			if !policy.IsProtected(f.Path) || c.MergeParent == "" {
				return h, nil, refuse("%v", err)
			}
		}
		if seen[f.Path] {
			return h, nil, refuse("%q is named twice", f.Path)
		}
		seen[f.Path] = true
		mode, ok := gitops.ParseChangeMode(f.Mode)
		if !ok {
			return h, nil, refuse("%q has an unknown mode %q", f.Path, f.Mode)
		}
		if mode == gitops.ChangeDelete {
			if f.Data != "" || f.Size != 0 || f.Blob != "" {
				return h, nil, refuse("%q is deleted but carries content", f.Path)
			}
			files = append(files, gitops.NewFile{Path: f.Path, Mode: mode})
			continue
		}
		if f.Data != strconv.Itoa(i) {
			return h, nil, refuse("%q names its content %q; entry %d's content is files/%d", f.Path, f.Data, i, i)
		}
		if f.Size < 0 || f.Size > MaxHandOverFileSize {
			return h, nil, refuse("%q is %d bytes, over the limit of %d", f.Path, f.Size, MaxHandOverFileSize)
		}
		if total += f.Size; total > MaxHandOverTotal {
			return h, nil, refuse("the change is over the limit of %d bytes in all", MaxHandOverTotal)
		}
		b, err := readRegular(filepath.Join(dir, "files", f.Data), MaxHandOverFileSize)
		if err != nil {
			return h, nil, refuse("content of %q: %v", f.Path, err)
		}
		if int64(len(b)) != f.Size {
			return h, nil, refuse("content of %q is %d bytes, not the %d the manifest says", f.Path, len(b), f.Size)
		}
		if got := gitops.BlobHash(b).String(); got != f.Blob {
			return h, nil, refuse("content of %q hashes to %s, not the %s the manifest says", f.Path, got, f.Blob)
		}
		files = append(files, gitops.NewFile{Path: f.Path, Mode: mode, Data: b})
	}
	return h, files, nil
}

func isHash(s string) bool {
	return len(s) == 40 && plumbing.IsHash(s) && strings.ToLower(s) == s && !plumbing.NewHash(s).IsZero()
}
