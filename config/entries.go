package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// ConfigEntry is one key of the configuration as the file writes it:
// `bazinga config` lists them with where each value came from, and
// `bazinga init` writes a commented file from them (issue 25).
type ConfigEntry struct {
	// Key is the dotted path ("tests.command").
	Key string
	// Value is the value in YAML, on one line ("30m", "[plan]", "{}").
	Value string
	// Comment is the key table's note on the key, or "".
	Comment string
}

// Entries lists every key of the configuration with its value, in the
// file's order (the one table that drives parsing, Validate and Marshal).
func Entries(c pipeline.Config) []ConfigEntry {
	out := make([]ConfigEntry, 0, len(cfgKeys))
	for _, k := range cfgKeys {
		out = append(out, ConfigEntry{Key: k.path, Value: cfgInline(k.encode(&c)), Comment: k.comment})
	}
	return out
}

// cfgInline writes a value node on one line: lists and mappings in flow style.
func cfgInline(n *yaml.Node) string {
	var flow func(*yaml.Node)
	flow = func(n *yaml.Node) {
		if n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode {
			n.Style = yaml.FlowStyle
		}
		for _, c := range n.Content {
			flow(c)
		}
	}
	flow(n)
	b, err := yaml.Marshal(n)
	if err != nil {
		return fmt.Sprintf("%q", n.Value)
	}
	return strings.TrimSpace(string(b))
}

// CommentedFile writes the configuration as a commented
// .github/bazinga.yml: the keys in set are written as values, each with
// set's note as its comment (or the key's own); every other key is a
// comment showing its value, so the file reads as the whole reference while
// setting only what it means to. head is written first, each line a
// comment. ParseConfig reads the result back to c for the keys in set and to
// the defaults elsewhere.
func CommentedFile(c pipeline.Config, head string, set map[string]string) []byte {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(head, "\n"), "\n") {
		b.WriteString(strings.TrimRight("# "+l, " ") + "\n")
	}
	entries := map[string]ConfigEntry{}
	for _, e := range Entries(c) {
		entries[e.Key] = e
	}
	line := func(indent, name string, e ConfigEntry, live bool) {
		note, isSet := set[e.Key]
		if !isSet || note == "" {
			note = e.Comment
		}
		text := indent + name + ": " + e.Value
		if note != "" {
			text += "  # " + note
		}
		if !live {
			text = "# " + text
		}
		b.WriteString(text + "\n")
	}
	for _, lvl := range cfgTree {
		if lvl.key != nil {
			_, live := set[lvl.key.path]
			line("", lvl.name, entries[lvl.key.path], live)
			continue
		}
		live := false
		for _, ch := range lvl.children {
			if _, ok := set[ch.key.path]; ok {
				live = true
			}
		}
		if live {
			b.WriteString(lvl.name + ":\n")
		} else {
			b.WriteString("# " + lvl.name + ":\n")
		}
		for _, ch := range lvl.children {
			_, isSet := set[ch.key.path]
			if live && !isSet {
				// A comment inside a live section keeps the section's indentation.
				e := entries[ch.key.path]
				text := "  # " + ch.name + ": " + e.Value
				if e.Comment != "" {
					text += "  # " + e.Comment
				}
				b.WriteString(text + "\n")
				continue
			}
			line("  ", ch.name, entries[ch.key.path], isSet)
		}
	}
	return []byte(b.String())
}
