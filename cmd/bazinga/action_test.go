package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestActionCommandIsWired(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 0, run([]string{"action", "-h"}, &out, &errOut))
	assert.Contains(t, out.String(), "bazinga action")
	out.Reset()
	assert.Equal(t, 0, run([]string{"help"}, &out, &errOut))
	assert.Contains(t, out.String(), "action    run one step inside GitHub Actions")
	assert.NotContains(t, out.String(), "next milestone")
}
