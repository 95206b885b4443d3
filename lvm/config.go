package lvm

import "strings"

// ConfigList reads an lvmconfig string array such as
// ["r|^/dev/zd.*|","a|.*|"] (a value of `lvmconfig --typeconfig full`)
// into its strings, backslash escapes undone. A value with no string, or
// "", gives nil.
func ConfigList(raw string) []string {
	var out []string
	s := strings.TrimSpace(raw)
	for {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			return out
		}
		s = s[i+1:]
		var b strings.Builder
		j := 0
		for ; j < len(s) && s[j] != '"'; j++ {
			if s[j] == '\\' && j+1 < len(s) {
				j++
			}
			b.WriteByte(s[j])
		}
		out = append(out, b.String())
		if j >= len(s) {
			return out
		}
		s = s[j+1:]
	}
}
