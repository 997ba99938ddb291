package codec

import (
	"crypto/ed25519"
	"strings"
	"testing"

	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/stretchr/testify/assert"
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

func TestStateKeyRotation(t *testing.T) {
	old := SigningKeyFromSecret([]byte("the previous state key, rotated out"))
	cur := testSigningKey
	st := State{V: StateVersion, Repo: "o/r", Issue: 3, Config: pipeline.DefaultConfig()}
	st.Session, _ = pipeline.Reconcile(pipeline.Session{}, []pipeline.Event{pipeline.Started("3", "do it", "main")}, timeAt(0), st.Config)
	block, err := EncodeState(st, old)
	require.NoError(t, err)
	_, err = DecodeState(block, cur.Public().(ed25519.PublicKey))
	assert.ErrorIs(t, err, ErrBadStateSig, "without the previous key, an old state does not verify")
	got, err := DecodeState(block, cur.Public().(ed25519.PublicKey), old.Public().(ed25519.PublicKey))
	require.NoError(t, err, "during the grace period it does")
	assert.Equal(t, st.Repo, got.Repo)
	// A short or garbage previous key is skipped, never a panic.
	_, err = DecodeState(block, cur.Public().(ed25519.PublicKey), ed25519.PublicKey("short"))
	assert.ErrorIs(t, err, ErrBadStateSig)

	keys, err := ParsePublicKeys(FormatPublicKey(cur.Public().(ed25519.PublicKey)) + ",\n " + FormatPublicKey(old.Public().(ed25519.PublicKey)))
	require.NoError(t, err)
	require.Len(t, keys, 2)
	assert.Equal(t, cur.Public(), keys[0])
	_, err = ParsePublicKeys(" , ")
	assert.Error(t, err)
	_, err = ParsePublicKeys(FormatPublicKey(cur.Public().(ed25519.PublicKey)) + ",nope")
	assert.ErrorContains(t, err, "key 2")
}
