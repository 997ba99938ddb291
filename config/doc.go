// Package config reads and writes a repository's .github/bazinga.yml
// (ARCHITECTURE.md §8): the YAML walked with line numbers and "did you mean"
// for typos, one key table that drives parsing, Validate, Marshal and the
// commented file `bazinga init` writes, and what the configuration knows of
// the agent CLIs (which one a command runs, the credentials each documents).
//
// It hands the engine a pipeline.Config, plain data: the engine holds no YAML
// and reads no file. Reading the file is the caller's job too (local mode reads
// it from the base commit, the bot through the API), so this package does no I/O.
package config
