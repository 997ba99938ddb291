// Package e2emerge_test holds the end-to-end tests of merging the way the
// repository allows (protection, rulesets, required checks, squash-only,
// refused pushes) on the harness of internal/e2eworld: a package of their
// own, so that action/ stays well inside go test's ten minutes.
package e2emerge_test

import (
	"testing"

	"github.com/bazinga-bot/bazinga/internal/e2eworld"
)

func TestMain(m *testing.M) { e2eworld.Main(m) }
