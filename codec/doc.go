// Package codec reads and writes what bazinga hides in GitHub comments: the
// signed session state of the tracking comment, the result blocks a step's
// job posts, the event blocks the orchestrator records, step ids and claim
// refs. It is shared by the orchestrator (package bot) and the step jobs
// (package action/stepjob), and does no I/O.
package codec
