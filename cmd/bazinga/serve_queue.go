package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/bazinga-bot/bazinga/jobq"
	"github.com/bazinga-bot/bazinga/server"
)

const serveQueueUsage = `Usage: bazinga serve dead [--limit N]
       bazinga serve retry (--all | DELIVERY-ID...)

The durable queue's dead letters: deliveries that failed for good (a
permanent GitHub error, a panic, or a transient failure past its attempts).
"dead" lists them, oldest first; "retry" makes them run again, with fresh
attempts, before their session's later deliveries. Both open the queue
BAZINGA_DATABASE_URL names (default: the SQLite file next to the
credentials file), so they run where serve runs, with its environment;
access to that database is the authorisation.

`

// serveQueueCommand is `bazinga serve dead|retry`.
func serveQueueCommand(ctx context.Context, sub string, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := newFlags("serve " + sub)
	limit := fs.Int("limit", 100, "list at most N dead deliveries")
	all := fs.Bool("all", false, "retry every dead delivery")
	pos, code, ok := parseFlags(fs, args, func(w io.Writer) { fmt.Fprint(w, serveQueueUsage) }, stdout, stderr)
	if !ok {
		return code
	}
	url, err := server.DatabaseURLFromEnv(getenv)
	if err == nil && url == "" {
		err = fmt.Errorf("%s is memory: there is no queue to inspect", server.EnvDatabaseURL)
	}
	if err != nil {
		fmt.Fprintf(stderr, "bazinga serve %s: %v\n", sub, err)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	st, err := jobq.Open(ctx, url)
	if err != nil {
		fmt.Fprintf(stderr, "bazinga serve %s: %v\n", sub, err)
		return 1
	}
	defer st.Close()
	switch sub {
	case "dead":
		if len(pos) > 0 {
			fmt.Fprintf(stderr, "bazinga serve dead: unexpected arguments %q\n\n%s", pos, serveQueueUsage)
			return exitUsage
		}
		dead, err := st.Dead(ctx, *limit)
		if err != nil {
			fmt.Fprintf(stderr, "bazinga serve dead: %v\n", err)
			return 1
		}
		if len(dead) == 0 {
			fmt.Fprintln(stdout, "no dead deliveries")
			return 0
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "DELIVERY\tEVENT\tSESSION\tATTEMPTS\tRECEIVED\tERROR")
		for _, e := range dead {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", e.ID, e.Event, e.Key, e.Attempts,
				e.Received.UTC().Format(time.RFC3339), oneLine(e.Err, 200))
		}
		tw.Flush()
		return 0
	default: // retry
		if *all == (len(pos) > 0) {
			fmt.Fprintf(stderr, "bazinga serve retry: give delivery ids or --all, not both or neither\n\n%s", serveQueueUsage)
			return exitUsage
		}
		n, err := st.RetryDead(ctx, pos)
		if err != nil {
			fmt.Fprintf(stderr, "bazinga serve retry: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "%d dead deliveries queued again\n", n)
		if !*all && int(n) < len(pos) {
			fmt.Fprintf(stderr, "bazinga serve retry: %d of the ids given are not dead deliveries (bazinga serve dead lists them)\n", len(pos)-int(n))
			return 1
		}
		return 0
	}
}

// oneLine keeps an error on one line of at most n bytes (it may quote
// GitHub's answer, which is untrusted text).
func oneLine(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}
