package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// newFlags returns a subcommand's flag set. Flags may come anywhere among
// the arguments (pflag's interspersed parsing) and "--" ends them. The set
// prints nothing itself: parseFlags writes the usage to stdout for -h and
// to stderr, after the error, for bad input.
func newFlags(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SortFlags = false // help lists flags in declaration order
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args into fs. When ok is false the command returns
// code at once: 0 after -h/--help (usage on stdout), exitUsage after bad
// input (the error and the usage on stderr).
func parseFlags(fs *pflag.FlagSet, args []string, usage func(io.Writer), stdout, stderr io.Writer) (pos []string, code int, ok bool) {
	err := fs.Parse(singleDashLongFlags(fs, args))
	switch {
	case errors.Is(err, pflag.ErrHelp):
		usage(stdout)
		return nil, exitOK, false
	case err != nil:
		fmt.Fprintf(stderr, "bazinga %s: %v\n", fs.Name(), err)
		usage(stderr)
		return nil, exitUsage, false
	}
	return fs.Args(), exitOK, true
}

// flagUsage writes head and the flags' descriptions.
func flagUsage(fs *pflag.FlagSet, head string) func(io.Writer) {
	return func(w io.Writer) {
		fmt.Fprint(w, head)
		if fs.HasFlags() {
			fmt.Fprint(w, "\nFlags:\n"+fs.FlagUsages())
		}
	}
}

// singleDashLongFlags keeps the Go flag package's spelling working
// (-repo DIR, -json) now that pflag reads a single dash as shorthands: a
// "-name" or "-name=value" whose name is a long flag of fs gets its second
// dash. The value after a flag that takes one is left alone, and nothing
// after "--" is touched.
func singleDashLongFlags(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	takesValue := func(name string) bool {
		f := fs.Lookup(name)
		return f != nil && f.NoOptDefVal == ""
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if strings.HasPrefix(a, "--") {
			out = append(out, a)
			if name, _, hasValue := strings.Cut(a[2:], "="); !hasValue && takesValue(name) && i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
			continue
		}
		if len(a) > 2 && a[0] == '-' {
			if name, _, hasValue := strings.Cut(a[1:], "="); fs.Lookup(name) != nil {
				out = append(out, "-"+a)
				if !hasValue && takesValue(name) && i+1 < len(args) {
					i++
					out = append(out, args[i])
				}
				continue
			}
		}
		out = append(out, a)
	}
	return out
}
