// Package bot is bazinga's GitHub side: the App's webhook server, slash
// commands, session state kept in comments and labels, and the effects that
// drive a session (DESIGN §6).
//
// The package is cut in two halves that meet at a small contract in
// server.go:
//
//   - transport: the HTTP server (signature check, bounded queue, per-key
//     lanes, dedup, panic recovery, /healthz, /metrics), configuration from
//     the environment, slash-command parsing, and the GitHub client factory
//     with its RoundTripper chain (ETag cache, rate-limit and retry, call
//     counting).
//   - core: a Processor (bot.New) that turns one Delivery into engine events,
//     reconciles the session and applies its effects.
//
// The server never interprets an event beyond routing it: every well-formed,
// signed delivery is acknowledged with 202 and handed to the Processor, which
// decides whether it matters.
package bot
