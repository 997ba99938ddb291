package config

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// This file holds the configuration keys of the build baseline and the
// harness-run checks (issue 13): tests.baseline, tests.junit and checks.

// cfgCheckJUnitGlob: a path.Match pattern inside the repository ("" = none).
func cfgCheckJUnitGlob(s string) string {
	if s == "" {
		return ""
	}
	if strings.HasPrefix(s, "/") || strings.Contains(s, `\`) {
		return fmt.Sprintf("want a glob relative to the repository root with / separators, such as \"build/test-results/*.xml\", got %q", s)
	}
	for _, part := range strings.Split(s, "/") {
		if part == ".." {
			return fmt.Sprintf("the glob must stay inside the repository (no ..), got %q", s)
		}
	}
	if _, err := path.Match(s, ""); err != nil {
		return fmt.Sprintf("not a valid glob (%v): %q", err, s)
	}
	return ""
}

var cfgCheckNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

func cfgCheckCheckName(s string) string {
	if !cfgCheckNameRE.MatchString(s) {
		return fmt.Sprintf("check name %q: want letters, digits, _ and -, at most 32", s)
	}
	return ""
}

func cfgCheckCheckCommand(s string) string {
	switch {
	case strings.TrimSpace(s) == "":
		return "want the command to run (with sh -c, like tests.command), got an empty string"
	case strings.IndexByte(s, 0) >= 0:
		return fmt.Sprintf("contains a NUL character: %q", s)
	}
	return ""
}

// checkProblems lists what is wrong with a list of checks, each message
// naming the check; shared by the file's decoding and Validate.
func checkProblems(cs []pipeline.CheckConfig) []string {
	var msgs []string
	if len(cs) > pipeline.MaxChecks {
		msgs = append(msgs, fmt.Sprintf("at most %d checks, got %d", pipeline.MaxChecks, len(cs)))
	}
	seen := map[string]bool{}
	for _, c := range cs {
		if msg := cfgCheckCheckName(c.Name); msg != "" {
			msgs = append(msgs, msg)
			continue
		}
		if seen[c.Name] {
			msgs = append(msgs, fmt.Sprintf("check %q is listed twice", c.Name))
		}
		seen[c.Name] = true
		if msg := cfgCheckCheckCommand(c.Command); msg != "" {
			msgs = append(msgs, c.Name+".command: "+msg)
		}
		if c.Timeout < 0 {
			msgs = append(msgs, fmt.Sprintf("%s.timeout: want a positive duration, got %q", c.Name, time.Duration(c.Timeout)))
		}
	}
	return msgs
}

// cfgChecksKey reads `checks:`, a mapping of names to a command, either
// written alone (`lint: golangci-lint run`, required) or as a mapping
// {command, required, timeout}. The file's order is kept.
func cfgChecksKey(p string, field func(*pipeline.Config) *[]pipeline.CheckConfig, comment string) cfgKey {
	return cfgKey{
		path:    p,
		comment: comment,
		decode: func(c *pipeline.Config, n *yaml.Node, p string) []*ConfigError {
			if n.Kind != yaml.MappingNode {
				return cfgErrs(n.Line, p, "want a mapping of check names to commands, such as {lint: {command: \"golangci-lint run\", required: true}}, got %s", cfgDescribe(n))
			}
			var (
				errs []*ConfigError
				out  []pipeline.CheckConfig
				seen = map[string]int{}
			)
			for i := 0; i+1 < len(n.Content); i += 2 {
				kn, vn := cfgResolve(n.Content[i]), cfgResolve(n.Content[i+1])
				if kn.Kind != yaml.ScalarNode {
					errs = append(errs, cfgErrs(kn.Line, p, "check names must be plain names, got %s", cfgDescribe(kn))...)
					continue
				}
				name := kn.Value
				key := p + "." + name
				if msg := cfgCheckCheckName(name); msg != "" {
					errs = append(errs, cfgErrs(kn.Line, p, "%s", msg)...)
					continue
				}
				if first, dup := seen[name]; dup {
					errs = append(errs, &ConfigError{Line: kn.Line, Key: key, keyInMsg: true,
						Msg: fmt.Sprintf("duplicate check %q (lines %d and %d)", key, first, kn.Line)})
					continue
				}
				seen[name] = kn.Line
				chk, e := cfgDecodeCheck(name, key, vn)
				if len(e) > 0 {
					errs = append(errs, e...)
					continue
				}
				out = append(out, chk)
			}
			if len(out) > pipeline.MaxChecks {
				errs = append(errs, cfgErrs(n.Line, p, "at most %d checks, got %d", pipeline.MaxChecks, len(out))...)
			}
			if len(errs) > 0 {
				return errs
			}
			*field(c) = out
			return nil
		},
		check: func(c *pipeline.Config) []string { return checkProblems(*field(c)) },
		encode: func(c *pipeline.Config) *yaml.Node {
			m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			if len(*field(c)) == 0 {
				m.Style = yaml.FlowStyle // "checks: {}"
			}
			for _, chk := range *field(c) {
				v := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				v.Content = append(v.Content,
					cfgStringNode("command"), cfgStringNode(chk.Command),
					cfgStringNode("required"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(chk.Required)})
				if chk.Timeout != 0 {
					v.Content = append(v.Content, cfgStringNode("timeout"), cfgStringNode(cfgFormatDuration(chk.Timeout)))
				}
				m.Content = append(m.Content, cfgStringNode(chk.Name), v)
			}
			return m
		},
	}
}

var cfgCheckFields = []string{"command", "required", "timeout"}

func cfgDecodeCheck(name, key string, n *yaml.Node) (pipeline.CheckConfig, []*ConfigError) {
	chk := pipeline.CheckConfig{Name: name, Required: true}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		if msg := cfgCheckCheckCommand(n.Value); msg != "" {
			return chk, cfgErrs(n.Line, key, "%s", msg)
		}
		chk.Command = n.Value
		return chk, nil
	}
	if n.Kind != yaml.MappingNode {
		return chk, cfgErrs(n.Line, key, "want a command string or a mapping {command, required, timeout}, got %s%s", cfgDescribe(n), cfgQuoteHint(n))
	}
	var errs []*ConfigError
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := cfgResolve(n.Content[i]), cfgResolve(n.Content[i+1])
		if kn.Kind != yaml.ScalarNode {
			errs = append(errs, cfgErrs(kn.Line, key, "keys must be plain names, got %s", cfgDescribe(kn))...)
			continue
		}
		fk := key + "." + kn.Value
		if first, dup := seen[kn.Value]; dup {
			errs = append(errs, &ConfigError{Line: kn.Line, Key: fk, keyInMsg: true,
				Msg: fmt.Sprintf("duplicate key %q (lines %d and %d)", fk, first, kn.Line)})
			continue
		}
		seen[kn.Value] = kn.Line
		if cfgIsNull(vn) {
			continue
		}
		switch kn.Value {
		case "command":
			if vn.Kind != yaml.ScalarNode || vn.ShortTag() != "!!str" {
				errs = append(errs, cfgErrs(vn.Line, fk, "want a string, got %s%s", cfgDescribe(vn), cfgQuoteHint(vn))...)
			} else if msg := cfgCheckCheckCommand(vn.Value); msg != "" {
				errs = append(errs, cfgErrs(vn.Line, fk, "%s", msg)...)
			} else {
				chk.Command = vn.Value
			}
		case "required":
			if vn.Kind == yaml.ScalarNode && vn.ShortTag() == "!!bool" && (vn.Value == "true" || vn.Value == "false") {
				chk.Required = vn.Value == "true"
			} else {
				errs = append(errs, cfgErrs(vn.Line, fk, "want true or false, got %s", cfgDescribe(vn))...)
			}
		case "timeout":
			d, err := time.ParseDuration(vn.Value)
			switch {
			case vn.Kind != yaml.ScalarNode || err != nil:
				errs = append(errs, cfgErrs(vn.Line, fk, "%s, got %s", cfgWantDuration, cfgDescribe(vn))...)
			case d <= 0:
				errs = append(errs, cfgErrs(vn.Line, fk, "want a positive duration such as \"5m\", got %q", vn.Value)...)
			default:
				chk.Timeout = pipeline.Duration(d)
			}
		default:
			msg := fmt.Sprintf("unknown key %q", fk)
			if best := cfgClosest(kn.Value, cfgCheckFields); best != "" {
				msg += fmt.Sprintf("; did you mean %q?", key+"."+best)
			} else {
				msg += " (known here: " + strings.Join(cfgCheckFields, ", ") + ")"
			}
			errs = append(errs, &ConfigError{Line: kn.Line, Key: fk, keyInMsg: true, Msg: msg})
		}
	}
	if len(errs) == 0 && chk.Command == "" {
		errs = append(errs, cfgErrs(n.Line, key, "a check needs a command")...)
	}
	return chk, errs
}
