package report

import "fmt"

// plural formats n with noun, adding an s unless n is 1 ("1 finding",
// "2 findings"). The planner keeps its own copy: a little copying is better
// than a dependency on the planner for one line of text.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
