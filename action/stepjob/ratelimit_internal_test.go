package stepjob

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestTransportOptionsWaitOnlyWherePublishing(t *testing.T) {
	tests := []struct {
		command string
		wait    time.Duration // 0: the transport's default (90 s)
	}{
		{CommandPublish, time.Hour + time.Minute},
		{CommandLand, time.Hour + time.Minute},
		{" publish ", time.Hour + time.Minute},
		{CommandAgent, 0},
		{CommandGate, 0},
		{CommandValidate, 0},
		{CommandReconcile, 0},
		{"", 0},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.wait, transportOptions(tc.command).MaxRateLimitWait, tc.command)
	}
}
