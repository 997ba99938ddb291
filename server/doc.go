// Package server is the GitHub App's HTTP front (`bazinga serve`): it
// verifies webhook signatures, answers 202 at once, deduplicates deliveries,
// queues them on per-session lanes for a Processor (the bot), sweeps active
// sessions periodically and serves /healthz and /metrics. It interprets no
// event beyond routing it.
package server
