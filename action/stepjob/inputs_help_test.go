package stepjob

import (
	"io"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/sethvargo/go-githubactions"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga"
)

// The inputs `bazinga action` reads, the inputs action.yml declares, the
// INPUT_* variables its composite step exports and the inputs `bazinga
// action -h` lists are one set: a new input missing from any of them fails
// here (issue 25).
func TestActionInputsOneDefinition(t *testing.T) {
	declared, err := ManifestInputs(bazinga.ActionManifest)
	require.NoError(t, err)
	var names []string
	for _, in := range declared {
		names = append(names, in.Name)
		assert.True(t, regexp.MustCompile(`\n  `+regexp.QuoteMeta(in.Name)+`[ \n]`).MatchString(Usage), "action -h lists %s", in.Name)
		assert.NotEmpty(t, in.Description, in.Name)
	}
	sort.Strings(names)

	// What readInputs asks for, over the commands (their inputs differ).
	read := map[string]bool{}
	for _, cmd := range []string{CommandAgent, CommandPublish, CommandLand, CommandReconcile} {
		getenv := func(k string) string {
			if name, ok := strings.CutPrefix(k, "INPUT_"); ok {
				read[strings.ToLower(strings.ReplaceAll(name, "_", "-"))] = true
				if name == "COMMAND" {
					return cmd
				}
			}
			return ""
		}
		gha := githubactions.New(githubactions.WithGetenv(getenv), githubactions.WithWriter(io.Discard))
		_, _ = readInputs(gha, getenv)
	}
	var got []string
	for k := range read {
		got = append(got, k)
	}
	sort.Strings(got)
	assert.Equal(t, names, got, "inputs read vs declared in action.yml")

	// The composite step passes each input on as INPUT_<NAME> (and, for
	// names with dashes, the underscore spelling too).
	manifest := string(bazinga.ActionManifest)
	for _, n := range names {
		up := strings.ToUpper(n)
		assert.Regexp(t, regexp.MustCompile(`\n\s+INPUT_`+regexp.QuoteMeta(up)+`: \$\{\{ inputs\.`+regexp.QuoteMeta(n)+` \}\}`), manifest, "INPUT_%s", up)
		if strings.Contains(n, "-") {
			us := strings.ReplaceAll(up, "-", "_")
			assert.Regexp(t, regexp.MustCompile(`\n\s+INPUT_`+us+`: \$\{\{ inputs\.`+regexp.QuoteMeta(n)+` \}\}`), manifest, "INPUT_%s", us)
		}
	}
}
