package gitops

import (
	"context"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A push whose view of a ref is stale fails instead of overwriting it.
func TestLocalPushChecksTheOldValue(t *testing.T) {
	f := newRemote(t)
	f.commitOn(t, "bazinga/s1-A", map[string]string{"c.txt": "new\n"})
	main := plumbing.NewHash(f.head(t, "main"))
	branch := plumbing.NewHash(f.head(t, "bazinga/s1-A"))
	ep, err := transport.NewEndpoint(f.bare)
	require.NoError(t, err)
	tr, err := client.NewClient(ep)
	require.NoError(t, err)
	sess, err := tr.NewReceivePackSession(ep, nil)
	require.NoError(t, err)
	defer sess.Close()
	req := packp.NewReferenceUpdateRequest()
	// The pusher believes main is at the branch head; it is not.
	req.Commands = []*packp.Command{{Name: plumbing.NewBranchReferenceName("main"), Old: branch, New: main}}
	_, err = sess.ReceivePack(context.Background(), req)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fetch first")
	assert.Equal(t, main.String(), f.head(t, "main"), "the ref is untouched")
}
