package testgate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

// benchGoTestOutput is `go test -json` output of a large run: 200 packages
// of 100 tests, each with two output lines, one test in fifty failing.
func benchGoTestOutput() []byte {
	var b bytes.Buffer
	for p := range 200 {
		pkg := fmt.Sprintf("example.com/m/pkg%03d", p)
		for i := range 100 {
			name := fmt.Sprintf("Test%03d", i)
			fmt.Fprintf(&b, `{"Time":"2026-11-23T15:08:51.77Z","Action":"run","Package":%q,"Test":%q}`+"\n", pkg, name)
			fmt.Fprintf(&b, `{"Time":"2026-11-23T15:08:51.77Z","Action":"output","Package":%q,"Test":%q,"Output":"=== RUN   %s\n"}`+"\n", pkg, name, name)
			action := "pass"
			if i%50 == 7 {
				action = "fail"
			}
			fmt.Fprintf(&b, `{"Time":"2026-11-23T15:08:51.77Z","Action":"output","Package":%q,"Test":%q,"Output":"    x_test.go:12: checked 42 cases\n"}`+"\n", pkg, name)
			fmt.Fprintf(&b, `{"Time":"2026-11-23T15:08:51.77Z","Action":%q,"Package":%q,"Test":%q,"Elapsed":0.01}`+"\n", action, pkg, name)
		}
	}
	return b.Bytes()
}

// BenchmarkGoTestReader measures naming the failing tests of a large
// `go test -json` run as the gate does, written in 32 KiB chunks as a pipe
// delivers them, against the plain way: every line decoded into a map.
//
//	go test -run '^$' -bench BenchmarkGoTestReader -benchmem -count 5 ./testgate/
func BenchmarkGoTestReader(b *testing.B) {
	data := benchGoTestOutput()
	b.Run("reader", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			r := newGoTestReader()
			for off := 0; off < len(data); off += 32 << 10 {
				r.Write(data[off:min(off+32<<10, len(data))])
			}
			if rep := r.report(); rep == nil || len(rep.Failed) != 400 {
				b.Fatal("wrong report")
			}
		}
	})
	b.Run("decode-every-line", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			failed := 0
			sc := bufio.NewScanner(bytes.NewReader(data))
			for sc.Scan() {
				var m map[string]any
				if json.Unmarshal(sc.Bytes(), &m) == nil && m["Action"] == "fail" {
					failed++
				}
			}
			if failed != 400 {
				b.Fatal("wrong count", failed)
			}
		}
	})
}
