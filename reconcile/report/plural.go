package report

import "fmt"

// plural formats n with noun, adding an s unless n is 1 ("1 finding",
// "2 findings").
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
