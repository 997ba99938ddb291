package ghfake

import (
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// WorkflowFile is a workflow file as the fake reads it: the triggers, the
// token permissions, the concurrency groups and the jobs with their `if`,
// `needs`, `outputs` and steps (which a fake runner plays). What the fake
// does not model (runs-on, timeouts, matrices, services, …) is ignored.
type WorkflowFile struct {
	Name    string
	RunName string
	// On maps each triggering event to its activity types (nil: every
	// type). workflow_dispatch and schedule are also here, with their
	// details in Inputs and Schedule.
	On       map[string][]string
	Inputs   map[string]WorkflowInput // workflow_dispatch inputs
	Schedule []string                 // cron expressions
	// RunOf lists the workflows (by name) whose runs trigger workflow_run
	// (on.workflow_run.workflows).
	RunOf []string
	// Permissions is the workflow-level permissions: block (nil: absent).
	Permissions *Permissions
	Concurrency *Concurrency
	Jobs        []JobSpec // in file order
}

// Permissions is a permissions: block, in the workflow syntax's names
// (pull-requests, id-token, …). Every permission not named is none.
type Permissions map[string]string

// Concurrency is a concurrency: block.
type Concurrency struct {
	Group            string // an expression template
	CancelInProgress string // "true", "false" or an expression
	// Queue is "single" (the default: one pending holder, a newer one
	// cancelling it) or "max" (up to 100 pending holders, in order).
	Queue string
}

// JobSpec is one job of a workflow file.
type JobSpec struct {
	ID          string // the key under jobs: (GITHUB_JOB)
	Name        string // name:, default the id
	Needs       []string
	If          string
	Permissions *Permissions // nil: the workflow's
	Concurrency *Concurrency
	Outputs     map[string]string
	Steps       []StepSpec
}

// StepSpec is one step of a job.
type StepSpec struct {
	ID, Name, If, Uses, Run, Shell string
	With                           map[string]string
	Env                            map[string]string
}

// permissionNames are the GITHUB_TOKEN permissions of the workflow syntax
// (https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-syntax#permissions).
var permissionNames = []string{
	"actions", "attestations", "checks", "contents", "deployments", "discussions", "id-token", "issues",
	"models", "packages", "pages", "pull-requests", "repository-projects", "security-events", "statuses",
}

// DefaultPermissions is what a job's GITHUB_TOKEN gets when neither the
// workflow nor the job has a permissions: block: the "restricted" default
// (contents and packages read), which is the default of repositories
// created since February 2023 and the one the fake encodes; older
// repositories and organisations may still default to read/write for
// everything ("permissive").
// https://docs.github.com/en/actions/reference/github_token-reference
var DefaultPermissions = Permissions{"contents": "read", "packages": "read"}

// ParseWorkflowFile reads a workflow file.
func ParseWorkflowFile(content []byte) (WorkflowFile, error) {
	var raw struct {
		Name        string               `yaml:"name"`
		RunName     string               `yaml:"run-name"`
		On          yaml.Node            `yaml:"on"`
		Permissions yaml.Node            `yaml:"permissions"`
		Concurrency yaml.Node            `yaml:"concurrency"`
		Jobs        yaml.Node            `yaml:"jobs"`
		Env         map[string]yaml.Node `yaml:"env"`
	}
	if err := yaml.Unmarshal(content, &raw); err != nil {
		return WorkflowFile{}, fmt.Errorf("workflow file: %w", err)
	}
	wf := WorkflowFile{Name: raw.Name, RunName: raw.RunName}
	var err error
	if wf.On, wf.Inputs, wf.Schedule, err = parseOn(&raw.On); err != nil {
		return WorkflowFile{}, err
	}
	if wr := mapValue(&raw.On, "workflow_run"); wr != nil {
		var w struct {
			Workflows []string `yaml:"workflows"`
		}
		if err := wr.Decode(&w); err != nil {
			return WorkflowFile{}, fmt.Errorf("on.workflow_run: %w", err)
		}
		if len(w.Workflows) == 0 {
			return WorkflowFile{}, fmt.Errorf("on.workflow_run: no workflows")
		}
		wf.RunOf = w.Workflows
	}
	if wf.Permissions, err = parsePermissions(&raw.Permissions, "permissions"); err != nil {
		return WorkflowFile{}, err
	}
	if wf.Concurrency, err = parseConcurrency(&raw.Concurrency, "concurrency"); err != nil {
		return WorkflowFile{}, err
	}
	if raw.Jobs.Kind != yaml.MappingNode || len(raw.Jobs.Content) == 0 {
		return WorkflowFile{}, fmt.Errorf("workflow file: no jobs")
	}
	for i := 0; i < len(raw.Jobs.Content); i += 2 {
		j, err := parseJob(raw.Jobs.Content[i].Value, raw.Jobs.Content[i+1])
		if err != nil {
			return WorkflowFile{}, err
		}
		wf.Jobs = append(wf.Jobs, j)
	}
	ids := map[string]bool{}
	for _, j := range wf.Jobs {
		ids[j.ID] = true
	}
	for _, j := range wf.Jobs {
		for _, n := range j.Needs {
			if !ids[n] {
				return WorkflowFile{}, fmt.Errorf("job %s: needs unknown job %q", j.ID, n)
			}
		}
	}
	if err := checkAcyclic(wf.Jobs); err != nil {
		return WorkflowFile{}, err
	}
	// Every expression must be one the fake can evaluate: fail now rather
	// than when a run reaches it.
	if err := wf.checkExpressions(); err != nil {
		return WorkflowFile{}, err
	}
	return wf, nil
}

// Triggers reports whether event (with activity type action) triggers the
// workflow.
func (wf WorkflowFile) Triggers(event, action string) bool {
	types, ok := wf.On[event]
	if !ok {
		return false
	}
	if types == nil || action == "" {
		return true
	}
	for _, t := range types {
		if t == action {
			return true
		}
	}
	return false
}

// Job returns the job with id.
func (wf WorkflowFile) Job(id string) (JobSpec, bool) {
	for _, j := range wf.Jobs {
		if j.ID == id {
			return j, true
		}
	}
	return JobSpec{}, false
}

// EffectivePermissions is what a job's GITHUB_TOKEN carries: the job's
// block, else the workflow's, else the repository default.
func (wf WorkflowFile) EffectivePermissions(job JobSpec) Permissions {
	switch {
	case job.Permissions != nil:
		return *job.Permissions
	case wf.Permissions != nil:
		return *wf.Permissions
	}
	return DefaultPermissions
}

// TokenPermissions converts workflow-syntax permissions to the GitHub App
// permission names tokens carry (pull-requests → pull_requests); id-token
// is not an API permission (it lets the job request an OIDC token) and is
// dropped, none levels too.
func (p Permissions) TokenPermissions() map[string]string {
	out := map[string]string{"metadata": "read"}
	for name, level := range p {
		if name == "id-token" || level == "none" {
			continue
		}
		out[strings.ReplaceAll(name, "-", "_")] = level
	}
	return out
}

func parseOn(n *yaml.Node) (map[string][]string, map[string]WorkflowInput, []string, error) {
	on := map[string][]string{}
	var inputs map[string]WorkflowInput
	var schedule []string
	switch n.Kind {
	case 0:
		return nil, nil, nil, fmt.Errorf("workflow file: no on: triggers")
	case yaml.ScalarNode:
		on[n.Value] = nil
	case yaml.SequenceNode:
		for _, e := range n.Content {
			on[e.Value] = nil
		}
	case yaml.MappingNode:
		for i := 0; i < len(n.Content); i += 2 {
			event, body := n.Content[i].Value, n.Content[i+1]
			on[event] = nil
			if body.Kind != yaml.MappingNode && body.Kind != yaml.SequenceNode {
				continue // event: (null)
			}
			switch event {
			case "schedule":
				var crons []struct {
					Cron string `yaml:"cron"`
				}
				if err := body.Decode(&crons); err != nil {
					return nil, nil, nil, fmt.Errorf("on.schedule: %w", err)
				}
				for _, c := range crons {
					schedule = append(schedule, c.Cron)
				}
				continue
			case "workflow_dispatch":
				var d struct {
					Inputs map[string]struct {
						Required bool     `yaml:"required"`
						Default  string   `yaml:"default"`
						Type     string   `yaml:"type"`
						Options  []string `yaml:"options"`
					} `yaml:"inputs"`
				}
				if err := body.Decode(&d); err != nil {
					return nil, nil, nil, fmt.Errorf("on.workflow_dispatch: %w", err)
				}
				inputs = map[string]WorkflowInput{}
				for name, in := range d.Inputs {
					inputs[name] = WorkflowInput{Required: in.Required, Default: in.Default, Type: in.Type, Options: in.Options}
				}
				continue
			}
			var t struct {
				Types yaml.Node `yaml:"types"`
			}
			if err := body.Decode(&t); err != nil {
				return nil, nil, nil, fmt.Errorf("on.%s: %w", event, err)
			}
			switch t.Types.Kind {
			case yaml.ScalarNode:
				on[event] = []string{t.Types.Value}
			case yaml.SequenceNode:
				var types []string
				if err := t.Types.Decode(&types); err != nil {
					return nil, nil, nil, fmt.Errorf("on.%s.types: %w", event, err)
				}
				on[event] = types
			}
		}
	default:
		return nil, nil, nil, fmt.Errorf("workflow file: on: is not an event, a list or a map")
	}
	if _, ok := on["workflow_dispatch"]; ok && inputs == nil {
		inputs = map[string]WorkflowInput{}
	}
	return on, inputs, schedule, nil
}

func parsePermissions(n *yaml.Node, where string) (*Permissions, error) {
	switch n.Kind {
	case 0:
		return nil, nil
	case yaml.ScalarNode:
		p := Permissions{}
		var level string
		switch n.Value {
		case "read-all":
			level = "read"
		case "write-all":
			level = "write"
		default:
			return nil, fmt.Errorf("%s: %q is not read-all, write-all or a map", where, n.Value)
		}
		for _, name := range permissionNames {
			l := level
			if name == "id-token" && level == "read" {
				continue // id-token has no read level
			}
			p[name] = l
		}
		return &p, nil
	case yaml.MappingNode:
		p := Permissions{}
		for i := 0; i < len(n.Content); i += 2 {
			name, level := n.Content[i].Value, n.Content[i+1].Value
			known := false
			for _, k := range permissionNames {
				known = known || k == name
			}
			if !known {
				return nil, fmt.Errorf("%s: unknown permission %q", where, name)
			}
			if level != "read" && level != "write" && level != "none" {
				return nil, fmt.Errorf("%s.%s: %q is not read, write or none", where, name, level)
			}
			if name == "id-token" && level == "read" {
				return nil, fmt.Errorf("%s.id-token: only write or none", where)
			}
			p[name] = level
		}
		return &p, nil
	}
	return nil, fmt.Errorf("%s: not a map", where)
}

// The queue property of a concurrency block
// (https://docs.github.com/en/actions/how-tos/write-workflows/choose-when-workflows-run/control-workflow-concurrency,
// data/reusables/actions/actions-group-concurrency.md in github/docs;
// changelog 2026-05-07 "GitHub Actions concurrency groups now allow larger
// queues"): single (the default) or max, up to 100 pending; max with
// cancel-in-progress true is a workflow validation error.
const (
	queueSingle = "single"
	queueMax    = "max"
	// queueMaxPending is how many holders wait under queue: max; more
	// are cancelled.
	queueMaxPending = 100
)

func checkQueue(q *string, cancelInProgress string) error {
	switch *q {
	case "":
		*q = queueSingle
	case queueSingle, queueMax:
	default:
		return fmt.Errorf("queue: %q is not single or max", *q)
	}
	if *q == queueMax && strings.TrimSpace(cancelInProgress) == "true" {
		return fmt.Errorf("queue: max cannot be combined with cancel-in-progress: true")
	}
	return nil
}

func parseConcurrency(n *yaml.Node, where string) (*Concurrency, error) {
	switch n.Kind {
	case 0:
		return nil, nil
	case yaml.ScalarNode:
		return &Concurrency{Group: n.Value, CancelInProgress: "false", Queue: queueSingle}, nil
	case yaml.MappingNode:
		var c struct {
			Group            string `yaml:"group"`
			CancelInProgress string `yaml:"cancel-in-progress"`
			Queue            string `yaml:"queue"`
		}
		if err := n.Decode(&c); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if c.Group == "" {
			return nil, fmt.Errorf("%s: no group", where)
		}
		if c.CancelInProgress == "" {
			c.CancelInProgress = "false"
		}
		if err := checkQueue(&c.Queue, c.CancelInProgress); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		return &Concurrency{Group: c.Group, CancelInProgress: c.CancelInProgress, Queue: c.Queue}, nil
	}
	return nil, fmt.Errorf("%s: not a group or a map", where)
}

func parseJob(id string, n *yaml.Node) (JobSpec, error) {
	var raw struct {
		Name        string            `yaml:"name"`
		Needs       yaml.Node         `yaml:"needs"`
		If          string            `yaml:"if"`
		Permissions yaml.Node         `yaml:"permissions"`
		Concurrency yaml.Node         `yaml:"concurrency"`
		Outputs     map[string]string `yaml:"outputs"`
		Steps       []struct {
			ID    string            `yaml:"id"`
			Name  string            `yaml:"name"`
			If    string            `yaml:"if"`
			Uses  string            `yaml:"uses"`
			Run   string            `yaml:"run"`
			Shell string            `yaml:"shell"`
			With  map[string]string `yaml:"with"`
			Env   map[string]string `yaml:"env"`
		} `yaml:"steps"`
	}
	if err := n.Decode(&raw); err != nil {
		return JobSpec{}, fmt.Errorf("job %s: %w", id, err)
	}
	j := JobSpec{ID: id, Name: raw.Name, If: raw.If, Outputs: raw.Outputs}
	if j.Name == "" {
		j.Name = id
	}
	switch raw.Needs.Kind {
	case yaml.ScalarNode:
		j.Needs = []string{raw.Needs.Value}
	case yaml.SequenceNode:
		if err := raw.Needs.Decode(&j.Needs); err != nil {
			return JobSpec{}, fmt.Errorf("job %s needs: %w", id, err)
		}
	}
	var err error
	if j.Permissions, err = parsePermissions(&raw.Permissions, "jobs."+id+".permissions"); err != nil {
		return JobSpec{}, err
	}
	if j.Concurrency, err = parseConcurrency(&raw.Concurrency, "jobs."+id+".concurrency"); err != nil {
		return JobSpec{}, err
	}
	for _, s := range raw.Steps {
		j.Steps = append(j.Steps, StepSpec{ID: s.ID, Name: s.Name, If: s.If, Uses: s.Uses, Run: s.Run, Shell: s.Shell, With: s.With, Env: s.Env})
	}
	return j, nil
}

func checkAcyclic(jobs []JobSpec) error {
	needs := map[string][]string{}
	for _, j := range jobs {
		needs[j.ID] = j.Needs
	}
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(string) error
	visit = func(id string) error {
		switch state[id] {
		case 1:
			return fmt.Errorf("job %s: needs form a cycle", id)
		case 2:
			return nil
		}
		state[id] = 1
		for _, n := range needs[id] {
			if err := visit(n); err != nil {
				return err
			}
		}
		state[id] = 2
		return nil
	}
	for _, j := range jobs {
		if err := visit(j.ID); err != nil {
			return err
		}
	}
	return nil
}

// checkExpressions parses every ${{ }} and if: of the file.
func (wf WorkflowFile) checkExpressions() error {
	check := func(where, s string) error {
		rest := s
		for {
			i := strings.Index(rest, "${{")
			if i < 0 {
				return nil
			}
			end := exprEnd(rest[i+3:])
			if end < 0 {
				return fmt.Errorf("%s: %q: no closing }}", where, s)
			}
			if _, err := parseExpr(rest[i+3 : i+3+end]); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			rest = rest[i+3+end+2:]
		}
	}
	checkIf := func(where, cond string) error {
		if cond == "" {
			return nil
		}
		c := strings.TrimSpace(cond)
		if strings.HasPrefix(c, "${{") {
			return check(where, c)
		}
		if _, err := parseExpr(c); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		return nil
	}
	if err := check("run-name", wf.RunName); err != nil {
		return err
	}
	if c := wf.Concurrency; c != nil {
		if err := check("concurrency.group", c.Group); err != nil {
			return err
		}
		if err := check("concurrency.cancel-in-progress", c.CancelInProgress); err != nil {
			return err
		}
	}
	for _, j := range wf.Jobs {
		p := "jobs." + j.ID
		if err := checkIf(p+".if", j.If); err != nil {
			return err
		}
		if c := j.Concurrency; c != nil {
			if err := check(p+".concurrency.group", c.Group); err != nil {
				return err
			}
			if err := check(p+".concurrency.cancel-in-progress", c.CancelInProgress); err != nil {
				return err
			}
		}
		for _, k := range sortedKeys(j.Outputs) {
			if err := check(p+".outputs."+k, j.Outputs[k]); err != nil {
				return err
			}
		}
		for i, s := range j.Steps {
			sp := fmt.Sprintf("%s.steps[%d]", p, i)
			if err := checkIf(sp+".if", s.If); err != nil {
				return err
			}
			for _, m := range []map[string]string{s.With, s.Env} {
				for _, k := range sortedKeys(m) {
					if err := check(sp+"."+k, m[k]); err != nil {
						return err
					}
				}
			}
			if err := check(sp+".run", s.Run); err != nil {
				return err
			}
		}
	}
	return nil
}

// sortedEvents lists the workflow's events, sorted.
func (wf WorkflowFile) sortedEvents() []string {
	out := make([]string, 0, len(wf.On))
	for e := range wf.On {
		out = append(out, e)
	}
	sort.Strings(out)
	return out
}

// mapValue is the value of key in a mapping node, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
