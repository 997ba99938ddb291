package stepjob

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/bazinga-bot/bazinga"
)

// Input is one input of the Action as action.yml declares it.
type Input struct {
	Name        string
	Description string
	Default     string
	Required    bool
}

// ManifestInputs reads the inputs of an action.yml, in the file's order.
func ManifestInputs(manifest []byte) ([]Input, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(manifest, &doc); err != nil {
		return nil, fmt.Errorf("action.yml: %w", err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("action.yml: not a mapping")
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "inputs" {
			continue
		}
		m := root.Content[i+1]
		var out []Input
		for j := 0; j+1 < len(m.Content); j += 2 {
			var in struct {
				Description string `yaml:"description"`
				Default     string `yaml:"default"`
				Required    bool   `yaml:"required"`
			}
			if err := m.Content[j+1].Decode(&in); err != nil {
				return nil, fmt.Errorf("action.yml: input %s: %w", m.Content[j].Value, err)
			}
			out = append(out, Input{Name: m.Content[j].Value, Description: in.Description, Default: in.Default, Required: in.Required})
		}
		return out, nil
	}
	return nil, fmt.Errorf("action.yml: no inputs")
}

// Usage is the help text of `bazinga action`, its inputs generated from
// action.yml (embedded in the binary): one definition, no drift (issue 25).
var Usage = usageText(bazinga.ActionManifest)

func usageText(manifest []byte) string {
	var b strings.Builder
	b.WriteString("bazinga action — run inside GitHub Actions (see action.yml)\n\nInputs (INPUT_* variables, as the runner sets them):\n")
	inputs, err := ManifestInputs(manifest)
	if err != nil {
		b.WriteString("  (cannot read them: " + err.Error() + ")\n")
	}
	const width = 116
	for _, in := range inputs {
		head := "  " + in.Name
		if in.Required {
			head += " (required)"
		} else if in.Default != "" {
			head += " (default " + in.Default + ")"
		}
		b.WriteString(head + "\n")
		line := "      "
		for _, w := range strings.Fields(in.Description) {
			if len(line)+1+len(w) > width && strings.TrimSpace(line) != "" {
				b.WriteString(line + "\n")
				line = "      "
			}
			if strings.TrimSpace(line) != "" {
				line += " "
			}
			line += w
		}
		if strings.TrimSpace(line) != "" {
			b.WriteString(line + "\n")
		}
	}
	b.WriteString(`
Outputs: status, summary, step. Exit code 0 on success, "duplicate" and
"skipped"; 1 when the step failed or an input is wrong.
`)
	return b.String()
}
