package proc

import (
	"context"
	"os/exec"
	"testing"
)

// BenchmarkRun measures what running a command costs: plain os/exec (the
// baseline), proc.Run directly (session + group kill) and proc.Run under the
// subreaper supervisor (one more exec of this binary and a /proc scan).
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
