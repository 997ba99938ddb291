// Package e2eactiononly_test holds the end-to-end tests of Action-only mode
// that must need no schedule run (issue 22): CI as a GitHub Actions workflow,
// cancelled reconciles, a publish job that fails, commands and findings, and
// pull requests a GITHUB_TOKEN may not open. On the harness of
// internal/e2eworld, in a package of their own so that no package of
// end-to-end tests comes near go test's ten minutes.
package e2eactiononly_test

import (
	"testing"

	"github.com/bazinga-bot/bazinga/internal/e2eworld"
)

func TestMain(m *testing.M) { e2eworld.Main(m) }
