// Package lvmconf keeps four settings of lvm.conf — devices/scan_lvs,
// devices/global_filter, devices/use_devicesfile and
// activation/raid_fault_policy — and every other byte of the file as it
// was.
//
// Edit is pure: it tokenizes the file just enough to find the devices
// sections and their assignments, replaces the value bytes of the managed
// settings (every active occurrence, so duplicate sections such as the one
// Proxmox VE's postinst appends cannot disagree) or inserts a missing one into
// the first section of its name. Comments, spacing, order and unrelated sections
// are untouched. A global_filter it cannot parse is never rewritten: Edit
// returns a *FilterError the planner turns into a finding, as oVirt's
// config-lvm-filter refuses to replace a filter it does not understand.
//
// Writer puts an edited file in place safely: it validates the candidate
// with lvmconfig --validate (LVM_SYSTEM_DIR pointing at a temporary copy),
// keeps a backup, and replaces the file with an fsync'd atomic rename.
package lvmconf

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/keel-storage/keel/lvm/conffile"
	"github.com/keel-storage/keel/lvm/lvmregex"
	"github.com/keel-storage/keel/reconcile/plan"
)

// ParseError is an lvm.conf keel cannot tokenize (an unterminated string,
// unbalanced braces). Nothing is written.
type ParseError = conffile.ParseError

// FilterError is an existing devices/global_filter keel cannot parse as a
// list of "a|regex|"/"r|regex|" entries; keel refuses to rewrite it.
type FilterError struct {
	Value string // the value as written in the file
	Msg   string
}

func (e *FilterError) Error() string {
	return fmt.Sprintf("lvm.conf: devices/global_filter %s: %s; keel will not rewrite a filter it cannot parse", e.Value, e.Msg)
}

// ErrBadEntry is returned for a desired filter entry that is not well formed.
var ErrBadEntry = errors.New("filter entry must look like a|regex| or r|regex|")

// CheckEntry reports whether e is a well-formed filter entry: "a" or "r",
// a delimiter, a regular expression LVM's own engine parses
// (lvm/lvmregex), the same delimiter.
func CheckEntry(e string) error {
	if len(e) < 3 || (e[0] != 'a' && e[0] != 'r') {
		return fmt.Errorf("%q: %w", e, ErrBadEntry)
	}
	d := e[1]
	if d == ' ' || d == '"' || d == '\\' || (d >= '0' && d <= '9') || (d|0x20 >= 'a' && d|0x20 <= 'z') {
		return fmt.Errorf("%q: delimiter %q: %w", e, d, ErrBadEntry)
	}
	if e[len(e)-1] != d {
		return fmt.Errorf("%q: no closing %q: %w", e, d, ErrBadEntry)
	}
	if strings.ContainsAny(e, "\"\n") {
		return fmt.Errorf("%q: contains a quote or newline: %w", e, ErrBadEntry)
	}
	if err := lvmregex.Check(e[2 : len(e)-1]); err != nil {
		return fmt.Errorf("%q: %w: %v", e, ErrBadEntry, err)
	}
	return nil
}

// filterOf returns the entries of a global_filter assignment, or a
// *FilterError when they cannot be parsed.
func filterOf(src []byte, a conffile.Assignment) ([]string, error) {
	raw := string(src[a.ValStart:a.ValEnd])
	if !a.WellFormed {
		return nil, &FilterError{raw, "not a plain list of strings"}
	}
	var out []string
	for _, v := range a.Values {
		if v.Kind != conffile.TString {
			return nil, &FilterError{raw, fmt.Sprintf("%s is not a string", v.Text)}
		}
		e := conffile.Unescape(v.Text)
		if err := CheckEntry(e); err != nil {
			return nil, &FilterError{raw, err.Error()}
		}
		out = append(out, e)
	}
	return out, nil
}

func boolText(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func listText(entries []string) string {
	q := make([]string, len(entries))
	for i, e := range entries {
		q[i] = quote(e)
	}
	return "[ " + strings.Join(q, ", ") + " ]"
}

// quote writes s as an lvm.conf string LVM reads back as s: libdevmapper
// unescapes only \" and \\ (dm_unescape_double_quotes) and keeps every
// other byte, so Go's escapes (strconv.Quote's \t, \x7f) would reach
// LVM's regex engine as other patterns.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

type edit struct {
	start, end int
	text       string
}

// Edit returns src with the settings of ch asserted, and whether anything
// changed. Settings that already hold the desired value keep their bytes.
func Edit(src []byte, ch plan.LVMConfChange) ([]byte, bool, error) {
	for _, e := range ch.GlobalFilter {
		if err := CheckEntry(e); err != nil {
			return nil, false, fmt.Errorf("desired devices/global_filter: %w", err)
		}
	}
	p, err := conffile.Parse(src)
	if err != nil {
		return nil, false, err
	}
	var edits []edit
	var inserts, activationInserts []string
	setBool := func(key string, want *bool) error {
		if want == nil {
			return nil
		}
		found := false
		for _, a := range p.Assigns {
			if a.Path != "devices/"+key {
				continue
			}
			found = true
			if !a.IsList && len(a.Values) == 1 && a.Values[0].Kind == conffile.TWord {
				if n, err := strconv.Atoi(a.Values[0].Text); err == nil && (n != 0) == *want {
					continue
				}
			}
			edits = append(edits, edit{a.ValStart, a.ValEnd, boolText(*want)})
		}
		if !found {
			inserts = append(inserts, key+" = "+boolText(*want))
		}
		return nil
	}
	if err := setBool("scan_lvs", ch.ScanLVs); err != nil {
		return nil, false, err
	}
	if err := setBool("use_devicesfile", ch.UseDevicesFile); err != nil {
		return nil, false, err
	}
	if ch.RaidFaultPolicy != "" {
		found := false
		for _, a := range p.Assigns {
			if a.Path != "activation/raid_fault_policy" {
				continue
			}
			found = true
			if !a.IsList && len(a.Values) == 1 && a.Values[0].Kind == conffile.TString &&
				conffile.Unescape(a.Values[0].Text) == ch.RaidFaultPolicy {
				continue
			}
			edits = append(edits, edit{a.ValStart, a.ValEnd, quote(ch.RaidFaultPolicy)})
		}
		if !found {
			activationInserts = append(activationInserts, "raid_fault_policy = "+quote(ch.RaidFaultPolicy))
		}
	}
	if ch.GlobalFilter != nil {
		found := false
		for _, a := range p.Assigns {
			if a.Path != "devices/global_filter" {
				continue
			}
			found = true
			cur, err := filterOf(src, a)
			if err != nil {
				return nil, false, err
			}
			if slicesEqual(cur, ch.GlobalFilter) {
				continue
			}
			edits = append(edits, edit{a.ValStart, a.ValEnd, listText(ch.GlobalFilter)})
		}
		if !found {
			inserts = append(inserts, "global_filter = "+listText(ch.GlobalFilter))
		}
	}
	if len(edits) == 0 && len(inserts) == 0 && len(activationInserts) == 0 {
		return src, false, nil
	}
	if len(inserts) > 0 {
		edits = append(edits, insertEdit(src, p, "devices", inserts))
	}
	if len(activationInserts) > 0 {
		e := insertEdit(src, p, "activation", activationInserts)
		if len(inserts) > 0 && e.start == len(src) {
			// Both sections appended at the end: one edit at that offset.
			last := &edits[len(edits)-1]
			if last.start == len(src) {
				last.text += strings.TrimPrefix(e.text, "\n")
				e = edit{}
			}
		}
		if e.text != "" {
			edits = append(edits, e)
		}
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].start > edits[j].start })
	out := append([]byte(nil), src...)
	for _, e := range edits {
		text := e.text
		// A string or list ends itself; a number put in its place would
		// run into a word right after it ("x"y = 1 becoming 0y = 1).
		if e.end < len(out) && conffile.WordByte(out[e.end]) && conffile.WordByte(text[len(text)-1]) {
			text += " "
		}
		out = append(out[:e.start], append([]byte(text), out[e.end:]...)...)
	}
	return out, true, nil
}

// insertEdit places new assignments on their own lines just before the
// closing brace of the first section named name, or appends that section.
func insertEdit(src []byte, p *conffile.File, name string, lines []string) edit {
	for _, s := range p.Sections {
		if s.Name != name {
			continue
		}
		lineStart := bytes.LastIndexByte(src[:s.CloseStart], '\n') + 1
		indent := "\t"
		var b strings.Builder
		if strings.TrimSpace(string(src[lineStart:s.CloseStart])) == "" {
			for _, l := range lines {
				b.WriteString(indent + l + "\n")
			}
			return edit{lineStart, lineStart, b.String()}
		}
		b.WriteString("\n")
		for _, l := range lines {
			b.WriteString(indent + l + "\n")
		}
		return edit{s.CloseStart, s.CloseStart, b.String()}
	}
	var b strings.Builder
	if len(src) > 0 && src[len(src)-1] != '\n' {
		b.WriteString("\n")
	}
	b.WriteString(name + " {\n")
	for _, l := range lines {
		b.WriteString("\t" + l + "\n")
	}
	b.WriteString("}\n")
	return edit{len(src), len(src), b.String()}
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Values are the managed settings as an lvm.conf file states them; a nil
// field is not set in the file (LVM's default applies).
type Values struct {
	ScanLVs        *bool
	GlobalFilter   []string
	UseDevicesFile *bool
	// RaidFaultPolicy is activation/raid_fault_policy, "" when not set.
	RaidFaultPolicy string
}

// Read returns the managed settings the file sets (the last occurrence of
// each, in file order). A filter it cannot parse is a *FilterError.
func Read(src []byte) (Values, error) {
	p, err := conffile.Parse(src)
	if err != nil {
		return Values{}, err
	}
	var v Values
	for _, a := range p.Assigns {
		switch a.Path {
		case "devices/scan_lvs", "devices/use_devicesfile":
			if a.IsList || len(a.Values) != 1 {
				continue
			}
			n, err := strconv.Atoi(a.Values[0].Text)
			if err != nil {
				continue
			}
			b := n != 0
			if a.Path == "devices/scan_lvs" {
				v.ScanLVs = &b
			} else {
				v.UseDevicesFile = &b
			}
		case "activation/raid_fault_policy":
			if !a.IsList && len(a.Values) == 1 && a.Values[0].Kind == conffile.TString {
				v.RaidFaultPolicy = conffile.Unescape(a.Values[0].Text)
			}
		case "devices/global_filter":
			f, err := filterOf(src, a)
			if err != nil {
				return v, err
			}
			v.GlobalFilter = f
		}
	}
	return v, nil
}
