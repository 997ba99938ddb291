package codec

import (
	"testing"

	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/stretchr/testify/require"
)

var testStateKey = []byte("a state key of sixteen+ bytes")

func TestStateBlockRoundTripAndTamper(t *testing.T) {
	st := State{V: StateVersion, Repo: "a/b", Issue: 7, Config: pipeline.DefaultConfig()}
	st.Session, _ = pipeline.Reconcile(pipeline.Session{}, []pipeline.Event{pipeline.Started("7", "do it", "main")}, timeAt(0), st.Config)
	block, err := EncodeState(st, testStateKey)
	require.NoError(t, err)
	got, err := DecodeState("hello\n"+block, testStateKey)
	require.NoError(t, err)
	require.Equal(t, st.Session.StepSeq, got.Session.StepSeq)
	_, err = DecodeState(block, []byte("another key, sixteen+ bytes"))
	require.ErrorIs(t, err, ErrBadStateMAC)
	_, err = DecodeState("no block", testStateKey)
	require.ErrorIs(t, err, ErrNoState)
}
