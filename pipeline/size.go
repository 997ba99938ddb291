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
// review and merge). SizeUnknown is a group the pm gave no size. Sizes are
// ordered: index and compare them by rank, never by their names.
type Size string

// Sizes, smallest first.
const (
	SizeUnknown Size = ""
	SizeS       Size = "S"
	SizeM       Size = "M"
	SizeL       Size = "L"
	SizeXL      Size = "XL"
)

var sizeEnum = enum[Size]{kind: "size", values: []Size{SizeUnknown, SizeS, SizeM, SizeL, SizeXL}}

func (z Size) String() string { return sizeEnum.name(z) }

func (z Size) MarshalText() ([]byte, error) { return []byte(z.String()), nil }

func (z *Size) UnmarshalText(b []byte) error { return sizeEnum.unmarshal(b, z) }

// rank orders the sizes, smallest first from 1; SizeUnknown (and any value
// that is not a size) is 0. It indexes nominalSize.
func (z Size) rank() int {
	switch z {
	case SizeS:
		return 1
	case SizeM:
		return 2
	case SizeL:
		return 3
	case SizeXL:
		return 4
	}
	return 0
}

// nominalSize is what each size stands for before anything is measured, in
// minutes of the whole group's work. The pm's contract
// (agent/templates/pm.md) describes the sizes in the same terms; each is
// twice the one before, so an estimate off by half lands at most one size
// away. It is indexed by Size.rank.
var nominalSize = [...]time.Duration{
	60 * time.Minute,  // SizeUnknown: the middle, no information
	30 * time.Minute,  // SizeS
	60 * time.Minute,  // SizeM
	120 * time.Minute, // SizeL
	240 * time.Minute, // SizeXL
}

// parseSize reads a plan group's size: S, M, L or XL, in any case; empty
// is no estimate.
func parseSize(s string) (Size, error) {
	s = strings.ToUpper(strings.TrimSpace(s))
	if s == "" {
		return SizeUnknown, nil
	}
	if z, err := sizeEnum.parse(s); err == nil {
		return z, nil
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
		z := g.Size.rank()
		m, n := done[g.ID].Minutes(), nominalSize[z].Minutes()
		sumMeasured[z] += m
		sumNominal[z] += n
		allMeasured += m
		allNominal += n
	}
	global := 1.0
	if allNominal > 0 {
		global = (allMeasured + nominalSize[SizeM.rank()].Minutes()) / (allNominal + nominalSize[SizeM.rank()].Minutes())
	}
	out := make([]float64, len(gs))
	for i, g := range gs {
		if g.Stage.Finished() {
			continue
		}
		z := g.Size.rank()
		n := nominalSize[z].Minutes()
		est := n * (sumMeasured[z] + n*global) / (sumNominal[z] + n)
		out[i] = max(est-done[g.ID].Minutes(), est/10)
	}
	return out
}
