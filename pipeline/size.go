package pipeline

import (
	"fmt"
	"strings"
	"time"
)

// Sizes (issue 23): the pm estimates each task group's size as a T-shirt
// size, a unit a model gives reliably, and the scheduler starts the ready
// group with the longest remaining chain of estimated work. The estimates
// are corrected as the session runs: the measured durations of finished
// steps, which the front-ends report as data (Event.StartedAt/EndedAt; the
// engine has no clock of its own), recalibrate each size.

// Size is the pm's estimate of a group's whole work (implementation, tests,
// review and merge). SizeUnknown is a group the pm gave no size.
type Size int

// Sizes, smallest first.
const (
	SizeUnknown Size = iota
	SizeS
	SizeM
	SizeL
	SizeXL
)

var sizeNames = []string{"", "S", "M", "L", "XL"}

func (z Size) String() string { return enumName(sizeNames, int(z)) }

func (z Size) MarshalText() ([]byte, error) { return []byte(z.String()), nil }

func (z *Size) UnmarshalText(b []byte) error { return enumUnmarshal("size", sizeNames, b, z) }

// nominalSize is what each size stands for before anything is measured, in
// minutes of the whole group's work. The pm's contract
// (agent/templates/pm.md) describes the sizes in the same terms; each is
// twice the one before, so an estimate off by half lands at most one size
// away.
var nominalSize = [...]time.Duration{
	SizeUnknown: 60 * time.Minute, // the middle: no information
	SizeS:       30 * time.Minute,
	SizeM:       60 * time.Minute,
	SizeL:       120 * time.Minute,
	SizeXL:      240 * time.Minute,
}

// parseSize reads a plan group's size: S, M, L or XL, in any case; empty
// is no estimate.
func parseSize(s string) (Size, error) {
	s = strings.ToUpper(strings.TrimSpace(s))
	if s == "" {
		return SizeUnknown, nil
	}
	for i, n := range sizeNames {
		if n != "" && n == s {
			return Size(i), nil
		}
	}
	return SizeUnknown, fmt.Errorf("size %q is not S, M, L or XL", s)
}

// MaxMeasuredStep bounds a step duration a front-end reports: timings are
// data from outside, and one absurd value must not steer the schedule.
const MaxMeasuredStep = 7 * 24 * time.Hour

// measured returns how long a step ran: the job's own start and end when
// the front-end reported usable ones, else the time from dispatch to the
// event's arrival; 0 when neither makes sense.
func measured(st *Step, started, ended, now time.Time) time.Duration {
	// To the second: enough to schedule by, and short in the stored state.
	ok := func(d time.Duration) bool { return d > 0 && d <= MaxMeasuredStep }
	if d := ended.Sub(started).Round(time.Second); !started.IsZero() && !ended.IsZero() && ok(d) {
		return d
	}
	if d := now.Sub(st.DispatchedAt).Round(time.Second); ok(d) {
		return d
	}
	return 0
}

// estimates returns, for each group, the estimated minutes of work left:
// its size's calibrated duration less the work its finished steps took
// (never below a tenth of the estimate while it is unfinished; 0 when
// finished). Calibration: for each size, the work measured on merged groups
// of that size against their nominal duration, shrunk towards the ratio of
// all merged groups (or 1) by one nominal group, so that one odd group does
// not swing the scale.
func estimates(gs []Group, steps []Step) []float64 {
	done := make(map[string]time.Duration, len(gs))
	for i := range steps {
		if st := &steps[i]; st.Took > 0 && st.Group != LeadGroup {
			done[st.Group] += st.Took.D()
		}
	}
	var sumMeasured, sumNominal [len(nominalSize)]float64
	var allMeasured, allNominal float64
	for _, g := range gs {
		if g.Stage != StageMerged || done[g.ID] == 0 {
			continue
		}
		m, n := done[g.ID].Minutes(), nominalSize[g.Size].Minutes()
		sumMeasured[g.Size] += m
		sumNominal[g.Size] += n
		allMeasured += m
		allNominal += n
	}
	global := 1.0
	if allNominal > 0 {
		global = (allMeasured + nominalSize[SizeM].Minutes()) / (allNominal + nominalSize[SizeM].Minutes())
	}
	out := make([]float64, len(gs))
	for i, g := range gs {
		if g.Stage.Finished() {
			continue
		}
		n := nominalSize[g.Size].Minutes()
		est := n * (sumMeasured[g.Size] + n*global) / (sumNominal[g.Size] + n)
		out[i] = max(est-done[g.ID].Minutes(), est/10)
	}
	return out
}
