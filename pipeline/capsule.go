package pipeline

import (
	"fmt"
	"strings"
)

var roleIcons = map[Role]string{
	RolePM: "📋", RoleDeveloper: "🔨", RoleSenior: "🛠️", RoleQA: "🧪", RoleTechLead: "👔",
	RoleInvestigator: "🔬", RoleRequirements: "📝", RoleMerge: "🔀", RoleValidate: "🏁",
}

// Capsule is the one line a person reads about a finished step, in the
// seeds' capsule format:
//
//	🔨 Group A [developer/haiku] READY_FOR_QA | Implemented JWT auth | 3 files | 12/12 tests pass → qa
func Capsule(st Step) string {
	var b strings.Builder
	icon := roleIcons[st.Role]
	switch st.State {
	case StepFailed:
		icon = "⚠️"
	case StepCancelled:
		icon = "⏹️"
	case StepInFlight:
		icon = "⏳"
	}
	who := "Group " + st.Group
	if st.Group == LeadGroup {
		who = "Session"
	}
	model := st.Model
	if model == "" {
		model = "harness"
	}
	fmt.Fprintf(&b, "%s %s [%s/%s]", icon, who, st.Role, model)
	switch st.State {
	case StepInFlight:
		fmt.Fprintf(&b, " %s…", st.Purpose)
		if st.Attempt > 1 {
			fmt.Fprintf(&b, " (attempt %d)", st.Attempt)
		}
		return b.String()
	case StepFailed:
		fmt.Fprintf(&b, " no result (%s)", oneLine(st.Note))
	case StepCancelled:
		fmt.Fprintf(&b, " cancelled (%s)", oneLine(st.Note))
	case StepDone:
		b.WriteString(" " + st.Result.Status.String())
		if st.Reported != StatusUnknown && st.Reported != st.Result.Status {
			fmt.Fprintf(&b, " (reported %s)", st.Reported)
		}
		for _, line := range st.Result.Summary {
			if line = oneLine(line); line != "" {
				b.WriteString(" | " + line)
			}
		}
	}
	if st.Usage != nil && !st.Usage.IsZero() {
		b.WriteString(" | " + st.Usage.String())
	}
	if st.Routed != "" {
		b.WriteString(" → " + st.Routed)
	}
	return b.String()
}

// oneLine keeps a capsule on one line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const max = 160
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}
