// Package e2emoves_test holds the end-to-end tests of what people do on
// GitHub mid-session (issue 28, docs/github-moves.md) and of pushes to a
// group branch after review, on the harness of internal/e2eworld: a package
// of their own, so that no package of end-to-end tests comes near go test's
// ten minutes.
package e2emoves_test

import (
	"testing"

	"github.com/bazinga-bot/bazinga/internal/e2eworld"
)

func TestMain(m *testing.M) { e2eworld.Main(m) }
