// Package calc is the demo's calculator.
package calc

// Add returns a + b.
func Add(a, b int) int { return a + b }

// Operations lists the operations the calculator supports.
var Operations = []string{
	"add",
}
