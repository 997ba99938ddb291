package agent

import (
	"fmt"

	"github.com/bazinga-bot/bazinga/internal/proc"
)

// genericDriver runs any other command: it gets the prompt on standard
// input and in BAZINGA_PROMPT_FILE, and returns its result in the result
// file or as the last JSON object (or Status: line) it prints. Such a
// command has no final answer apart from its output, so whatever reaches
// its output or the result file can choose the status: use a CLI with a
// driver where the agent runs code it did not write.
type genericDriver struct{}

func init() { register(genericDriver{}) }

func (genericDriver) Name() string            { return "generic" }
func (genericDriver) FinalAnswer() bool       { return false }
func (genericDriver) Check([]string) []string { return nil }

func (genericDriver) Invocation(args []string, _ Invoke) (Invocation, error) {
	return Invocation{Args: args}, nil
}

func (genericDriver) NewReader() OutputReader { return newTextReader() }

// GenericOutputBytes is how much of a generic command's output is read for
// its result: the end, where a result is printed.
const GenericOutputBytes = 4 << 20

// textReader keeps the end of plain output.
type textReader struct{ tail *proc.Tail }

func newTextReader() *textReader { return &textReader{tail: proc.NewTail(GenericOutputBytes)} }

// Write takes the output as it comes: plain output needs no lines, and a
// huge line costs nothing beyond the tail.
func (r *textReader) Write(p []byte) (int, error) { return r.tail.Write(p) }

func (r *textReader) Line(line []byte, cut bool) {
	r.tail.Write(line)
	r.tail.Write([]byte{'\n'})
}

func (r *textReader) Finish([]byte) Final {
	f := Final{raw: r.tail.Bytes(), HasAnswer: true}
	if r.tail.Total() > int64(GenericOutputBytes) {
		f.Notes = append(f.Notes, fmt.Sprintf("output was %d bytes; read the last %d for the result", r.tail.Total(), GenericOutputBytes))
	}
	return f
}
