package codec

import (
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// State is what the tracking comment stores: the session, the configuration
// it runs with, what the bot knows about the group PRs, and the actions of
// the last reconcile that have not been carried out yet.
type State struct {
	V    int    `json:"v"`
	Repo string `json:"repo"`
	// RepoID is the repository's id (0 in states written before it was
	// kept): a session is its repository's across renames and transfers.
	RepoID  int64            `json:"repo_id,omitempty"`
	Issue   int              `json:"issue"`
	Session pipeline.Session `json:"session"`
	Config  pipeline.Config  `json:"config"`
	// PRs are the group pull requests, in group order.
	PRs []GroupPR `json:"prs,omitempty"`
	// Pending are actions of an earlier reconcile that failed or were not
	// reached; they are carried out before the next reconcile's.
	Pending []PendingEffect `json:"pending,omitempty"`
	// IssueLabel is the bazinga label last set on the issue.
	IssueLabel string `json:"issue_label,omitempty"`
	// Closed is set once the issue was closed on completion.
	Closed bool `json:"closed,omitempty"`
	// RepoURL is the repository's web address, for links.
	RepoURL string `json:"repo_url,omitempty"`
	// Waiting is set while a GitHub rate limit of the bot's identity is
	// exhausted: reconciles before Until do nothing, and the first one
	// after it resumes the session, no human needed. It lives here, not in
	// the engine: the pause is about the carrier, not the work.
	Waiting *RateLimitWait `json:"waiting,omitempty"`
}

// RateLimitWait is a session's wait for a GitHub rate limit.
type RateLimitWait struct {
	// Who is the limited identity as people read it ("installation 42").
	Who       string    `json:"who"`
	Resource  string    `json:"resource,omitempty"`
	Secondary bool      `json:"secondary,omitempty"`
	Until     time.Time `json:"until"`
	// Since is when the session began to wait (the first of waits that
	// followed one another): steps in flight do not time out for it.
	Since time.Time `json:"since,omitzero"`
}

// GroupPR is what the bot knows about a group's pull request.
type GroupPR struct {
	Group  string `json:"group"`
	Number int    `json:"number,omitempty"`
	// BodyHash is the hash of the title and body last written, so unchanged
	// text is not written again.
	BodyHash string `json:"body_hash,omitempty"`
	// Label is the bazinga label last set on the PR.
	Label string `json:"label,omitempty"`
	// Branch is set once the group branch is known to exist (read back
	// from older states and rebuilds; the jobs create the branch).
	Branch bool `json:"branch,omitempty"`
	// Tried is set when opening the PR was found pointless (the branch had
	// no commits yet) at the group's step TriedLast; it is tried again once
	// the group has a newer finished step.
	Tried     bool   `json:"tried,omitempty"`
	TriedLast string `json:"tried_last,omitempty"`
	// NoDraft: the repository refused a draft (a private repository on a
	// free plan), so the PR was opened ready for review, with a note.
	NoDraft bool `json:"no_draft,omitempty"`
}

const StateVersion = 1

// PR returns the group's PR record, creating it.
func (s *State) PR(group string) *GroupPR {
	for i := range s.PRs {
		if s.PRs[i].Group == group {
			return &s.PRs[i]
		}
	}
	s.PRs = append(s.PRs, GroupPR{Group: group})
	return &s.PRs[len(s.PRs)-1]
}

// PRNumber returns the group's PR number, or 0.
func (s *State) PRNumber(group string) int {
	for _, p := range s.PRs {
		if p.Group == group {
			return p.Number
		}
	}
	return 0
}

// GroupOfPR returns the group whose PR is number.
func (s *State) GroupOfPR(number int) string {
	for _, p := range s.PRs {
		if p.Number == number && number != 0 {
			return p.Group
		}
	}
	return ""
}

// The state block is signed with Ed25519: only the orchestrator holds the
// private key, and a job (or anyone) verifies with the public key. A job
// that could forge the state could choose its own configuration (the test
// command it runs, the workflows it may change), so a shared secret, which
// every verifier would hold, is not enough.

// SigningKeyFromSecret derives the orchestrator's signing key from the state
// key (BAZINGA_STATE_KEY: random, generated for this and nothing else; the
// caller checks its strength). Its public key is published to every job,
// so a guessable secret would be an offline oracle: never pass another
// secret (the webhook secret was, before issue 21).
func SigningKeyFromSecret(secret []byte) ed25519.PrivateKey {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("bazinga state signing key v1"))
	return ed25519.NewKeyFromSeed(m.Sum(nil))
}

// FormatPublicKey is the public key as jobs are given it: base64.
func FormatPublicKey(pub ed25519.PublicKey) string { return base64.StdEncoding.EncodeToString(pub) }

// ParsePublicKeys reads one or more public keys in FormatPublicKey's form,
// separated by commas or white space: the current key first, then previous
// ones still accepted during a key rotation.
func ParsePublicKeys(s string) ([]ed25519.PublicKey, error) {
	var keys []ed25519.PublicKey
	for i, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r' }) {
		k, err := ParsePublicKey(f)
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("no state public key")
	}
	return keys, nil
}

// ParsePublicKey reads a public key in FormatPublicKey's form.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("not a state public key: want the base64 of %d bytes, as bazinga prints it", ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}

// sigPrefix marks an Ed25519 signature in the block.
const sigPrefix = "ed25519:"

// EncodeState renders the hidden state block: base64(gzip(json)), then the
// Ed25519 signature of that payload.
func EncodeState(st State, key ed25519.PrivateKey) (string, error) {
	if len(key) != ed25519.PrivateKeySize {
		return "", errors.New("encode state: no signing key")
	}
	js, err := json.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("encode state: %w", err)
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write(js); err != nil {
		return "", fmt.Errorf("encode state: %w", err)
	}
	if err := zw.Close(); err != nil {
		return "", fmt.Errorf("encode state: %w", err)
	}
	payload := base64.StdEncoding.EncodeToString(buf.Bytes())
	sig := ed25519.Sign(key, []byte(payload))
	return StateMarker + payload + "." + sigPrefix + base64.StdEncoding.EncodeToString(sig) + BlockEnd, nil
}

func verifyAny(payload, sig []byte, pub ed25519.PublicKey, previous []ed25519.PublicKey) bool {
	if ed25519.Verify(pub, payload, sig) {
		return true
	}
	for _, k := range previous {
		if len(k) == ed25519.PublicKeySize && ed25519.Verify(k, payload, sig) {
			return true
		}
	}
	return false
}

// Errors reading a state block.
var (
	ErrNoState     = errors.New("no state block")
	ErrBadStateSig = errors.New("state block does not verify")
)

// DecodeState reads the state block of a comment body and verifies its
// signature with the orchestrator's public key, or one of the previous keys
// still accepted while the key is rotated (the next write re-signs with the
// current key).
func DecodeState(body string, pub ed25519.PublicKey, previous ...ed25519.PublicKey) (State, error) {
	raw, ok := HiddenBlock(body, StateMarker)
	if !ok {
		return State{}, ErrNoState
	}
	i := strings.LastIndexByte(raw, '.')
	if i < 0 || len(pub) != ed25519.PublicKeySize {
		return State{}, ErrBadStateSig
	}
	payload, sig := raw[:i], raw[i+1:]
	s, ok := strings.CutPrefix(sig, sigPrefix)
	if !ok {
		return State{}, ErrBadStateSig
	}
	sb, err := base64.StdEncoding.DecodeString(s)
	if err != nil || !verifyAny([]byte(payload), sb, pub, previous) {
		return State{}, ErrBadStateSig
	}
	gz, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return State{}, fmt.Errorf("state block: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return State{}, fmt.Errorf("state block: %w", err)
	}
	js, err := io.ReadAll(io.LimitReader(zr, 64<<20))
	if err != nil {
		return State{}, fmt.Errorf("state block: %w", err)
	}
	var st State
	if err := json.Unmarshal(js, &st); err != nil {
		return State{}, fmt.Errorf("state block: %w", err)
	}
	if st.V != StateVersion {
		return State{}, fmt.Errorf("state block: version %d, this bazinga reads %d", st.V, StateVersion)
	}
	// Check the session's internal references the way the engine does.
	sjs, err := st.Session.Marshal()
	if err != nil {
		return State{}, err
	}
	if st.Session, err = pipeline.UnmarshalSession(sjs); err != nil {
		return State{}, fmt.Errorf("state block: %w", err)
	}
	return st, nil
}

// EffectKind is what a pending effect does.
type EffectKind string

// Effect kinds, carried out in this order within one reconcile.
const (
	EffectDispatch EffectKind = "dispatch" // run a step (workflow_dispatch)
	EffectCancel   EffectKind = "cancel"   // cancel a withdrawn step's run, best effort
	EffectComment  EffectKind = "comment"  // post a bot comment (replies, notices, event records)
	EffectReview   EffectKind = "review"   // post a step's findings as a PR review (issue 26)
	EffectResolve  EffectKind = "resolve"  // resolve the review threads a later review no longer reports (issue 26)
	EffectIssue    EffectKind = "issue"    // open a follow-up as an issue for a later session (issue 26, github.followup_label)
	EffectLabels   EffectKind = "labels"   // set the issue's bazinga label
	EffectClose    EffectKind = "close"    // close the issue of a finished session
)

// PendingEffect is an effect in the outbox: a reconcile writes it with the
// state, in the same tracking-comment write, and then carries it out; the
// next reconcile drops it once GitHub shows it done (a run for the step, a
// comment with its marker, the label, the closed issue) and carries it out
// again otherwise. Its ID is stable, so doing it twice is recognised.
type PendingEffect struct {
	ID   string     `json:"id"`
	Kind EffectKind `json:"kind"`
	// At is when the reconcile that asked for it ran.
	At   time.Time `json:"at"`
	Step string    `json:"step,omitempty"`
	// Group is the group of a dispatch.
	Group string `json:"group,omitempty"`
	// Number is where a comment (or a review: the group PR) goes; Text is its body.
	Number int    `json:"number,omitempty"`
	Text   string `json:"text,omitempty"`
	// Label is the issue label of a labels effect.
	Label string `json:"label,omitempty"`
	// Failed is set when carrying it out failed: the next reconcile does it
	// again at once (an effect not known to have failed may still be on its
	// way, like a dispatch whose run GitHub has not created yet).
	Failed bool `json:"failed,omitempty"`
}

// EffectMarker is the hidden line that marks a comment as the effect id, so
// a later reconcile sees it was posted.
func EffectMarker(id string) string { return EffectPrefix + id + BlockEnd }

// EffectPrefix starts an effect marker.
const EffectPrefix = "<!-- bazinga:effect:v1 "

// HasEffectMarker reports whether body carries the marker of effect id.
func HasEffectMarker(body, id string) bool { return strings.Contains(body, EffectMarker(id)) }
