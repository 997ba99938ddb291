package codec

import (
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/stretchr/testify/require"
)

var testSigningKey = SigningKeyFromSecret([]byte("a state secret"))

func TestStateBlockRoundTripAndTamper(t *testing.T) {
	st := State{V: StateVersion, Repo: "a/b", Issue: 7, Config: pipeline.DefaultConfig()}
	st.Session, _ = pipeline.Reconcile(pipeline.Session{}, []pipeline.Event{pipeline.Started("7", "do it", "main")}, timeAt(0), st.Config)
	block, err := EncodeState(st, testSigningKey)
	require.NoError(t, err)
	got, err := DecodeState("hello\n"+block, testSigningKey.Public().(ed25519.PublicKey))
	require.NoError(t, err)
	require.Equal(t, st.Session.StepSeq, got.Session.StepSeq)
	other := SigningKeyFromSecret([]byte("another secret"))
	_, err = DecodeState(block, other.Public().(ed25519.PublicKey))
	require.ErrorIs(t, err, ErrBadStateSig, "another orchestrator's key")
	forged, err := EncodeState(st, other)
	require.NoError(t, err)
	_, err = DecodeState(forged, testSigningKey.Public().(ed25519.PublicKey))
	require.ErrorIs(t, err, ErrBadStateSig, "a state signed by anyone else")
	tampered := strings.Replace(block, ".ed25519:", "A.ed25519:", 1)
	_, err = DecodeState(tampered, testSigningKey.Public().(ed25519.PublicKey))
	require.ErrorIs(t, err, ErrBadStateSig, "a changed payload")
	pub, err := ParsePublicKey(FormatPublicKey(testSigningKey.Public().(ed25519.PublicKey)))
	require.NoError(t, err)
	require.True(t, pub.Equal(testSigningKey.Public()))
	_, err = ParsePublicKey("bm90IGEga2V5")
	require.ErrorContains(t, err, "not a state public key")
	_, err = DecodeState("no block", testSigningKey.Public().(ed25519.PublicKey))
	require.ErrorIs(t, err, ErrNoState)
}
