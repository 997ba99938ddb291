package bot

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
)

// The command mark (issue 22): a command comment counts once whether its
// delivery or a catch-up applied it; a state without a mark starts at the
// newest comment, so older commands are never replayed.
func TestMarkCommands(t *testing.T) {
	comments := []ghapi.Comment{{ID: 10}, {ID: 14}, {ID: 12}}
	for _, tc := range []struct {
		name   string
		mark   *codec.CommandMark
		in     input
		want   codec.CommandMark
		seen   []int64
		unseen []int64
	}{
		{name: "no mark: starts at the newest comment", in: input{}, want: codec.CommandMark{Through: 14},
			seen: []int64{10, 14}, unseen: []int64{15}},
		{name: "no mark, a newer command applied", in: input{cmdComment: 20}, want: codec.CommandMark{Through: 20}},
		{name: "a command applied above the mark", mark: &codec.CommandMark{Through: 14, Applied: []int64{30}},
			in: input{cmdComment: 20}, want: codec.CommandMark{Through: 14, Applied: []int64{20, 30}},
			seen: []int64{13, 20, 30}, unseen: []int64{15, 25, 31}},
		{name: "applied twice is recorded once", mark: &codec.CommandMark{Through: 14, Applied: []int64{20}},
			in: input{cmdComment: 20}, want: codec.CommandMark{Through: 14, Applied: []int64{20}}},
		{name: "a catch-up moves the mark past what it read", mark: &codec.CommandMark{Through: 14, Applied: []int64{20, 30}},
			in: input{through: 25}, want: codec.CommandMark{Through: 25, Applied: []int64{30}}},
		{name: "a catch-up that read everything", mark: &codec.CommandMark{Through: 14, Applied: []int64{20}},
			in: input{through: 20}, want: codec.CommandMark{Through: 20}},
		{name: "an older catch-up never moves it back", mark: &codec.CommandMark{Through: 40},
			in: input{through: 25, cmdComment: 33}, want: codec.CommandMark{Through: 40}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := codec.State{Commands: tc.mark}
			var before *codec.CommandMark
			if tc.mark != nil {
				cp := *tc.mark
				before = &cp
			}
			markCommands(&st, comments, tc.in)
			assert.Equal(t, tc.want, *st.Commands)
			if tc.mark != nil {
				assert.Equal(t, *before, *tc.mark, "the loaded state is not changed in place")
			}
			for _, id := range tc.seen {
				assert.True(t, st.Commands.Seen(id), "comment %d", id)
			}
			for _, id := range tc.unseen {
				assert.False(t, st.Commands.Seen(id), "comment %d", id)
			}
		})
	}
	var none *codec.CommandMark
	assert.False(t, none.Seen(5), "no mark: nothing was read")
	assert.False(t, (&codec.CommandMark{Through: 9}).Seen(0), "no comment")
}

// Only a person's comment with a command the session acts on is caught up.
func TestIsCommandComment(t *testing.T) {
	b := &Bot{o: Options{Login: "bazinga-app[bot]"}}
	for _, tc := range []struct {
		c    ghapi.Comment
		want bool
	}{
		{ghapi.Comment{Author: "alice", Body: "/bazinga approve"}, true},
		{ghapi.Comment{Author: "alice", Body: "ok then\n/bazinga status"}, true},
		{ghapi.Comment{Author: "alice", Body: "/bazinga help"}, false},
		{ghapi.Comment{Author: "alice", Body: "no command"}, false},
		{ghapi.Comment{Author: "alice", Body: "`/bazinga approve` in code"}, false},
		{ghapi.Comment{Author: "ci-bot", AuthorType: "Bot", Body: "/bazinga approve"}, false},
		{ghapi.Comment{Author: "bazinga-app[bot]", Body: "/bazinga approve"}, false},
	} {
		assert.Equal(t, tc.want, b.isCommandComment(tc.c), "%q by %s", tc.c.Body, tc.c.Author)
	}
}
