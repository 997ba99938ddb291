package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRunCommands(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		code       int
		wantStdout string
		wantStderr string
	}{
		{"version", []string{"version"}, 0, "bazinga dev\n", ""},
		{"help", []string{"help"}, 0, "Commands:", ""},
		{"no args", nil, 2, "", "Usage:"},
		{"unknown", []string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(tt.args, &out, &errOut)
			assert.Equal(t, tt.code, code)
			assert.Contains(t, out.String(), tt.wantStdout)
			assert.Contains(t, errOut.String(), tt.wantStderr)
		})
	}
}
