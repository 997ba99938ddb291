package gateway

import "io"

// NewMeterForBench is an Anthropic stream meter, for BenchmarkMeter.
func NewMeterForBench() io.Writer { return newMeter(Anthropic, true) }
