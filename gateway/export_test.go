package gateway

import (
	"io"
	"time"
)

// NewMeterForBench is an Anthropic stream meter, for BenchmarkMeter.
func NewMeterForBench() io.Writer { return newMeter(Anthropic, true) }

// ObservePump makes every pump of the package report its time per read to f until the returned func is called.
func ObservePump(f func(n int, d time.Duration)) (stop func()) {
	pumpObserver.Store(&f)
	return func() { pumpObserver.Store(nil) }
}
