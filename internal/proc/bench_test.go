package proc

import (
	"context"
	"os/exec"
	"testing"
)

// BenchmarkRun measures what running a command costs: plain os/exec (the
// baseline), coreutils timeout(1) with a kill-after (the usual tool for
// SIGTERM-then-SIGKILL, run through os/exec), proc.Run directly (session +
// group kill) and proc.Run under the subreaper supervisor (one more exec of
// this binary and a walk of its /proc children).
//
//	go test -run '^$' -bench BenchmarkRun -count 5 ./internal/proc/
func BenchmarkRun(b *testing.B) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true(1)")
	}
	b.Run("os-exec", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command(truePath).Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	if timeoutPath, err := exec.LookPath("timeout"); err == nil {
		b.Run("coreutils-timeout", func(b *testing.B) {
			for b.Loop() {
				if err := exec.Command(timeoutPath, "-k", "5s", "30m", truePath).Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, mode := range []struct{ name, direct string }{{"direct", "1"}, {"supervised", ""}} {
		b.Run(mode.name, func(b *testing.B) {
			b.Setenv("BAZINGA_PROC_DIRECT", mode.direct)
			for b.Loop() {
				res, err := Run(context.Background(), Cmd{Path: truePath, Args: []string{"true"}})
				if err != nil || res.ExitCode != 0 || res.Supervised != (mode.direct == "") {
					b.Fatal(err, res)
				}
			}
		})
	}
}
