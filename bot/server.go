package bot

import (
	"context"
	"errors"
	"time"
)

// Delivery is one webhook delivery, verified and parsed just enough to route it.
type Delivery struct {
	ID           string // X-GitHub-Delivery
	Event        string // X-GitHub-Event
	Action       string // payload "action", if any
	Installation int64  // payload installation.id, if any
	Repo         string // "owner/name", if any
	Payload      []byte
	Received     time.Time
}

// Processor is what the server feeds; the core's *Bot implements it.
type Processor interface {
	// Key returns the serialisation key of a delivery: deliveries with the
	// same key are processed one at a time, in arrival order ("" = no
	// ordering needed). It is called on the request path, so it must be
	// cheap and must not call GitHub.
	Key(d Delivery) string
	// Process handles one delivery. Return an error wrapping ErrIgnored for
	// a delivery bazinga does not act on (counted as "ignored", not logged
	// as a failure).
	Process(ctx context.Context, d Delivery) error
	// Sweep is called periodically (and once at start-up) to reconcile
	// active sessions: timeouts, orphans, clarification timeouts.
	Sweep(ctx context.Context) error
}

// ErrIgnored is returned (possibly wrapped) by Processor.Process for a
// delivery that needs no work: it is counted as outcome "ignored".
var ErrIgnored = errors.New("bot: delivery ignored")
