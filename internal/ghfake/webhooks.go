package ghfake

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/google/go-github/v66/github"
)

// Delivery is one webhook delivery attempt.
type Delivery struct {
	ID         string // X-GitHub-Delivery; a redelivery keeps it
	Seq        int    // order of the attempt, 1-based
	Event      string // X-GitHub-Event
	Action     string
	Repo       string // "owner/name"; empty for ping
	Payload    []byte
	Redelivery bool
	Status     int    // receiver's status code; 0 if the request failed
	Err        string // transport error, if any
	At         time.Time
	Duration   time.Duration

	url, secret string
}

// SetWebhook sets the app's webhook URL and secret (empty secret: unsigned
// deliveries, as GitHub sends them). Events are only delivered while a URL
// is set.
func (f *Fake) SetWebhook(url, secret string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hookURL, f.hookSecret = url, secret
}

// SetWebhookMode switches between Sync and Async delivery.
func (f *Fake) SetWebhookMode(m DeliveryMode) {
	f.qmu.Lock()
	f.opts.WebhookMode = m
	f.qcond.Broadcast()
	f.qmu.Unlock()
	if m == Sync {
		f.drain()
	}
}

func (f *Fake) mode() DeliveryMode {
	f.qmu.Lock()
	defer f.qmu.Unlock()
	return f.opts.WebhookMode
}

// Ping sends a ping event, as GitHub does when a webhook is created.
func (f *Fake) Ping() {
	f.mu.Lock()
	hookID := f.id("hook")
	f.emit(nil, "ping", "", &github.PingEvent{
		Zen:          github.String("Design for failure."),
		HookID:       github.Int64(hookID),
		Hook:         &github.Hook{ID: github.Int64(hookID), Type: github.String("App"), Name: github.String("web"), Active: github.Bool(true), Events: []string{"*"}},
		Installation: f.installationJSON(),
	})
	f.mu.Unlock()
	f.afterChange()
}

// SendEvent delivers an arbitrary payload as event through the webhook,
// signed like any other delivery (for replaying recorded GitHub payloads),
// and returns its delivery id ("" if no webhook is set).
func (f *Fake) SendEvent(event string, payload []byte) string {
	var a struct {
		Action string `json:"action"`
	}
	_ = json.Unmarshal(payload, &a)
	f.mu.Lock()
	if f.hookURL == "" {
		f.mu.Unlock()
		return ""
	}
	d := &Delivery{Event: event, Action: a.Action, Payload: append([]byte(nil), payload...), url: f.hookURL, secret: f.hookSecret}
	f.qmu.Lock()
	f.deliverySeq++
	d.ID = deliveryGUID(f.deliverySeq)
	f.queue = append(f.queue, d)
	f.qcond.Broadcast()
	f.qmu.Unlock()
	f.mu.Unlock()
	f.afterChange()
	return d.ID
}

// SendInstallation emits an installation event (created, deleted,
// suspend, unsuspend, new_permissions_accepted) from sender.
func (f *Fake) SendInstallation(action, sender string) {
	f.mu.Lock()
	var repos []*github.Repository
	for _, r := range f.repos {
		repos = append(repos, r.json())
	}
	f.emit(nil, "installation", action, &github.InstallationEvent{
		Action: github.String(action), Repositories: repos, Sender: f.userJSON(sender), Installation: f.fullInstallationJSON(),
	})
	f.mu.Unlock()
	f.afterChange()
}

// emit queues an event. The payload is rendered now, so a delivery shows
// the state at the time of the event, as GitHub's do. Caller holds f.mu.
func (f *Fake) emit(r *Repo, event, action string, payload any) {
	if f.hookURL == "" && (r == nil || len(r.workflows) == 0) {
		return
	}
	b, err := json.Marshal(payload)
	if err != nil {
		f.logf("ghfake: encoding %s payload: %v", event, err)
		return
	}
	if f.hookURL != "" {
		d := &Delivery{Event: event, Action: action, Payload: b, url: f.hookURL, secret: f.hookSecret}
		if r != nil {
			d.Repo = r.FullName()
		}
		f.qmu.Lock()
		f.deliverySeq++
		d.ID = deliveryGUID(f.deliverySeq)
		f.queue = append(f.queue, d)
		f.qcond.Broadcast()
		f.qmu.Unlock()
	}
	// After queueing, so the triggering event is delivered before the
	// workflow_run it causes.
	if r != nil && len(r.workflows) > 0 {
		f.triggerWorkflows(r, event, action, b)
	}
}

// deliveryGUID derives a UUID-shaped delivery id from a sequence number:
// unique within a fake, and the same in every run.
func deliveryGUID(n int) string {
	h := sha256.Sum256([]byte("ghfake-delivery-" + strconv.Itoa(n)))
	x := hex.EncodeToString(h[:16])
	return x[0:8] + "-" + x[8:12] + "-4" + x[13:16] + "-a" + x[17:20] + "-" + x[20:32]
}

// afterChange delivers queued events now in Sync mode (no-op in Async mode,
// where the worker does). Call without f.mu.
func (f *Fake) afterChange() {
	if f.mode() == Sync {
		f.drain()
	}
}

// drain delivers queued events in order on this goroutine, unless another
// goroutine already is (then that one delivers them, in order).
func (f *Fake) drain() {
	f.qmu.Lock()
	if f.draining {
		f.qmu.Unlock()
		return
	}
	f.draining = true
	for len(f.queue) > 0 {
		d := f.queue[0]
		f.queue = f.queue[1:]
		f.qmu.Unlock()
		f.deliver(d)
		f.qmu.Lock()
	}
	f.draining = false
	f.qcond.Broadcast()
	f.qmu.Unlock()
}

// deliveryWorker delivers in Async mode, in order.
func (f *Fake) deliveryWorker() {
	for {
		f.qmu.Lock()
		for (len(f.queue) == 0 || f.opts.WebhookMode == Sync || f.draining) && !f.isClosing() {
			f.qcond.Wait()
		}
		if f.isClosing() {
			f.qmu.Unlock()
			return
		}
		f.qmu.Unlock()
		f.drain()
	}
}

func (f *Fake) isClosing() bool {
	select {
	case <-f.closing:
		return true
	default:
		return false
	}
}

// deliver POSTs one delivery as GitHub does and records the outcome.
func (f *Fake) deliver(d *Delivery) {
	start := time.Now()
	req, err := http.NewRequest(http.MethodPost, d.url, bytes.NewReader(d.Payload))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "GitHub-Hookshot/ghfake")
		req.Header.Set("X-GitHub-Event", d.Event)
		req.Header.Set("X-GitHub-Delivery", d.ID)
		req.Header.Set("X-GitHub-Hook-ID", "1")
		req.Header.Set("X-GitHub-Hook-Installation-Target-Type", "integration")
		req.Header.Set("X-GitHub-Hook-Installation-Target-ID", strconv.FormatInt(f.opts.AppID, 10))
		if d.secret != "" {
			m := hmac.New(sha256.New, []byte(d.secret))
			m.Write(d.Payload)
			req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m.Sum(nil)))
			m1 := hmac.New(sha1.New, []byte(d.secret))
			m1.Write(d.Payload)
			req.Header.Set("X-Hub-Signature", "sha1="+hex.EncodeToString(m1.Sum(nil)))
		}
		var resp *http.Response
		resp, err = f.hookClient.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			d.Status = resp.StatusCode
		}
	}
	if err != nil {
		d.Err = err.Error()
		f.logf("ghfake: delivery %s (%s) failed: %v", d.ID, d.Event, err)
	}
	d.Duration = time.Since(start)
	f.mu.Lock()
	d.At = f.now()
	f.mu.Unlock()
	f.qmu.Lock()
	d.Seq = len(f.deliveries) + 1
	f.deliveries = append(f.deliveries, d)
	f.qmu.Unlock()
}

// Deliveries returns a copy of every delivery attempt so far, in order.
func (f *Fake) Deliveries() []Delivery {
	f.qmu.Lock()
	defer f.qmu.Unlock()
	out := make([]Delivery, len(f.deliveries))
	for i, d := range f.deliveries {
		out[i] = *d
	}
	return out
}

// Redeliver sends a past delivery again with the same delivery id and
// payload, as GitHub's "Redeliver" button does.
func (f *Fake) Redeliver(id string) error {
	f.qmu.Lock()
	var found *Delivery
	for _, d := range f.deliveries {
		if d.ID == id {
			found = d
		}
	}
	if found == nil {
		f.qmu.Unlock()
		return fmt.Errorf("delivery %s: %w", id, ErrNotFound)
	}
	d := &Delivery{ID: found.ID, Event: found.Event, Action: found.Action, Repo: found.Repo,
		Payload: found.Payload, Redelivery: true, url: found.url, secret: found.secret}
	f.queue = append(f.queue, d)
	f.qcond.Broadcast()
	f.qmu.Unlock()
	f.afterChange()
	return nil
}

// WaitWebhooks waits until every queued event has been delivered, or
// timeout passes.
func (f *Fake) WaitWebhooks(timeout time.Duration) error {
	if f.mode() == Sync {
		f.drain()
	}
	deadline := time.Now().Add(timeout)
	for {
		f.qmu.Lock()
		idle := len(f.queue) == 0 && !f.draining
		f.qmu.Unlock()
		if idle {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ghfake: webhooks still pending after %v", timeout)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// --- event payloads (caller holds f.mu) ---

func (f *Fake) emitIssue(r *Repo, is *issue, action, sender string, lbl *label, changes *github.EditChange) {
	if is.pr != nil {
		f.emitPR(r, is, action, sender, lbl, changes, "", "")
		return
	}
	ev := &github.IssuesEvent{
		Action: github.String(action), Issue: r.issueJSON(is), Changes: changes,
		Repo: r.json(), Sender: f.userJSON(sender), Installation: f.installationJSON(),
	}
	if lbl != nil {
		ev.Label = r.labelJSON(lbl)
	}
	f.emit(r, "issues", action, ev)
}

func (f *Fake) emitPR(r *Repo, is *issue, action, sender string, lbl *label, changes *github.EditChange, before, after string) {
	refs, _ := r.heads()
	ev := &github.PullRequestEvent{
		Action: github.String(action), Number: github.Int(is.number), PullRequest: r.prJSON(is, refs, false),
		Changes: changes, Repo: r.json(), Sender: f.userJSON(sender), Installation: f.installationJSON(),
	}
	if lbl != nil {
		ev.Label = r.labelJSON(lbl)
	}
	if before != "" {
		ev.Before, ev.After = github.String(before), github.String(after)
	}
	f.emit(r, "pull_request", action, ev)
}

func (f *Fake) emitComment(r *Repo, is *issue, c *comment, action, sender string, changes *github.EditChange) {
	f.emit(r, "issue_comment", action, &github.IssueCommentEvent{
		Action: github.String(action), Issue: r.issueJSON(is), Comment: r.commentJSON(c), Changes: changes,
		Repo: r.json(), Sender: f.userJSON(sender), Installation: f.installationJSON(),
	})
}
