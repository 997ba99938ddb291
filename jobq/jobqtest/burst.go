package jobqtest

import (
	"sync"
	"time"
)

// Burst calls send(i) for i in [0, n), one call started every 2 ms
// whether or not the earlier ones returned (an open loop of 500 a second,
// as GitHub sends a burst of deliveries), and returns once all have
// returned. Each call's time is returned at index i.
func Burst(n int, send func(i int)) []time.Duration {
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < n; i++ {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			send(i)
			lat[i] = time.Since(t0)
		}()
	}
	wg.Wait()
	return lat
}
