package proc

import (
	"os"
	"slices"
)

// Environ builds a command's whole environment from an allowlist: each name
// in pass that is set in the harness's environment, then every entry of set
// (which wins over a passed name). The result is sorted, so it does not
// depend on map order, and holds nothing the caller did not name.
func Environ(pass []string, set map[string]string) []string {
	env := map[string]string{}
	for _, name := range pass {
		if v, ok := os.LookupEnv(name); ok {
			env[name] = v
		}
	}
	for k, v := range set {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}
