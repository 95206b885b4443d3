package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// The docs that run (TestDocs). Every code block of README.md and docs/*.md
// that holds a command is either run here against the bundled snapshots or
// exempted on purpose, by an HTML comment on the line before it (blank lines
// between them allowed), which a reader of the rendered page does not see:
//
//	<!-- doctest: run [exit=0,2] [setup: SHELL] -->
//	    a console block: each "$ " line runs in sh (with keel on PATH, in a
//	    directory that sees the repository's files); the lines up to the next
//	    "$ " are its output, stdout and stderr as a terminal shows them, where
//	    a line "..." stands for any lines. A block without "$ " lines runs
//	    each line as a command and checks only the exit. exit= gives each
//	    command's exit status in order (default 0); setup runs first.
//	<!-- doctest: help COMMAND -->
//	    the block is exactly what `keel help COMMAND` prints.
//	<!-- doctest: synopsis COMMAND -->
//	    the block names the flags of COMMAND, every one of them and no other.
//	<!-- doctest: lines [exit=N] SHELL -->
//	    every line of the block but "#" comments is a line of SHELL's stdout;
//	    SHELL exits N (default 0).
//	<!-- doctest: skip REASON -->
//	    not run here, for REASON (it needs a real host, a guest, the network).
//
// A command block without a comment fails the test, and so does a comment
// that precedes no block: a new command in the docs is run or consciously
// exempted.

// docBlock is one code block of a Markdown file.
type docBlock struct {
	file  string   // relative to the repository root
	line  int      // of the block's first line (the fence, or the first indented line)
	info  string   // the fence's info string ("sh", "cue", ""); "" for an indented block
	text  []string // the lines inside, indentation of an indented block removed
	annot string   // the doctest comment's text after "doctest:", "" when none
}

func (b docBlock) where() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

var (
	fenceRE = regexp.MustCompile("^( {0,3})(```+|~~~+)\\s*([^`\\s]*)")
	annotRE = regexp.MustCompile(`^ {0,3}<!--\s*doctest:\s*(.*?)\s*-->\s*$`)
	// commandRE marks a line that is a command: keel's, make's, an
	// environment assignment or a path to a script, after an optional
	// "$ " prompt.
	commandRE = regexp.MustCompile(`^(\$ )?(sudo )?(keel( |$)|usage: keel |make |[A-Z_]+=\S* |\./|e2e/|packaging/|systemctl |journalctl |cue )`)
)

// dataInfos are the info strings of blocks that hold data, not commands.
var dataInfos = []string{"cue", "go", "json", "yaml", "ini", "promql", "text", "txtar"}

// readDocBlocks returns the code blocks of the Markdown file root/rel:
// fenced blocks, and indented blocks that follow a blank line.
func readDocBlocks(root, rel string) ([]docBlock, []string, error) {
	data, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return nil, nil, err
	}
	var (
		blocks   []docBlock
		problems []string
		annot    string
		annotAt  int
		lines    []string
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	take := func() string {
		a := annot
		annot = ""
		return a
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := annotRE.FindStringSubmatch(l); m != nil {
			if annot != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: doctest comment precedes no code block", rel, annotAt))
			}
			annot, annotAt = m[1], i+1
			continue
		}
		if m := fenceRE.FindStringSubmatch(l); m != nil {
			b := docBlock{file: rel, line: i + 1, info: m[3], annot: take()}
			indent, fence := m[1], m[2]
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimLeft(lines[i], " "), fence); i++ {
				// A block in a list item is indented as its fence is.
				b.text = append(b.text, strings.TrimPrefix(lines[i], indent))
			}
			blocks = append(blocks, b)
			continue
		}
		if strings.HasPrefix(l, "    ") && strings.TrimSpace(l) != "" && i > 0 && strings.TrimSpace(lines[i-1]) == "" {
			b := docBlock{file: rel, line: i + 1, annot: take()}
			for ; i < len(lines) && (strings.HasPrefix(lines[i], "    ") || strings.TrimSpace(lines[i]) == ""); i++ {
				b.text = append(b.text, strings.TrimPrefix(lines[i], "    "))
			}
			for len(b.text) > 0 && strings.TrimSpace(b.text[len(b.text)-1]) == "" {
				b.text = b.text[:len(b.text)-1]
			}
			i--
			blocks = append(blocks, b)
			continue
		}
		if strings.TrimSpace(l) != "" && annot != "" {
			problems = append(problems, fmt.Sprintf("%s:%d: doctest comment precedes no code block", rel, annotAt))
			annot = ""
		}
	}
	if annot != "" {
		problems = append(problems, fmt.Sprintf("%s:%d: doctest comment precedes no code block", rel, annotAt))
	}
	return blocks, problems, sc.Err()
}

// isCommandBlock reports whether b holds a command a reader may type.
func isCommandBlock(b docBlock) bool {
	if slices.Contains(dataInfos, b.info) {
		return false
	}
	if b.info == "sh" || b.info == "console" || b.info == "bash" || b.info == "shell" {
		return true
	}
	for _, l := range b.text {
		if commandRE.MatchString(strings.TrimSpace(l)) {
			return true
		}
	}
	return false
}

// docScript turns a classified block into a testscript archive; skip is
// true (with the archive empty) for a block exempted by "skip".
func docScript(b docBlock) (script string, skip bool, err error) {
	kind, rest, _ := strings.Cut(b.annot, " ")
	rest = strings.TrimSpace(rest)
	var s, files strings.Builder
	fmt.Fprintf(&s, "# %s (%s)\n", b.where(), b.annot)
	file := func(name string, lines []string) {
		fmt.Fprintf(&files, "-- %s --\n", name)
		for _, l := range lines {
			files.WriteString(l + "\n")
		}
	}
	switch kind {
	case "skip":
		if rest == "" {
			return "", false, fmt.Errorf("%s: doctest skip without a reason", b.where())
		}
		return "", true, nil
	case "help":
		if rest == "" {
			return "", false, fmt.Errorf("%s: doctest help without a command", b.where())
		}
		fmt.Fprintf(&s, "exits 0 keel help %s\ncmp stdout want\n", rest)
		file("want", b.text)
	case "synopsis":
		if rest == "" {
			return "", false, fmt.Errorf("%s: doctest synopsis without a command", b.where())
		}
		fmt.Fprintf(&s, "exits 0 keel help %s\ndocflags want\n", rest)
		file("want", b.text)
	case "lines":
		if rest == "" {
			return "", false, fmt.Errorf("%s: doctest lines without a command", b.where())
		}
		want := "0"
		if w, tail, _ := strings.Cut(rest, " "); strings.HasPrefix(w, "exit=") {
			want, rest = strings.TrimPrefix(w, "exit="), tail
		}
		fmt.Fprintf(&s, "exits %s sh cmd.sh\ndoclines want\n", want)
		file("cmd.sh", []string{rest})
		file("want", b.text)
	case "run":
		var exits []int
		for rest != "" {
			word, tail, _ := strings.Cut(rest, " ")
			switch {
			case strings.HasPrefix(word, "exit="):
				for _, e := range strings.Split(strings.TrimPrefix(word, "exit="), ",") {
					n, err := strconv.Atoi(e)
					if err != nil {
						return "", false, fmt.Errorf("%s: doctest exit=: %w", b.where(), err)
					}
					exits = append(exits, n)
				}
				rest = strings.TrimSpace(tail)
			case word == "setup:":
				s.WriteString("exits 0 sh setup.sh\n")
				file("setup.sh", []string{tail})
				rest = ""
			default:
				return "", false, fmt.Errorf("%s: doctest run: unknown word %q", b.where(), word)
			}
		}
		cmds, outs := splitConsole(b.text)
		if len(cmds) == 0 {
			return "", false, fmt.Errorf("%s: doctest run: no command in the block", b.where())
		}
		if len(exits) != 0 && len(exits) != len(cmds) {
			return "", false, fmt.Errorf("%s: doctest run: %d exit statuses for %d commands", b.where(), len(exits), len(cmds))
		}
		for i, c := range cmds {
			want := 0
			if len(exits) > 0 {
				want = exits[i]
			}
			fmt.Fprintf(&s, "exits %d sh cmd%d.sh\n", want, i)
			file(fmt.Sprintf("cmd%d.sh", i), []string{"exec 2>&1", c})
			if outs != nil {
				fmt.Fprintf(&s, "docout want%d\n", i)
				file(fmt.Sprintf("want%d", i), outs[i])
			}
		}
	default:
		return "", false, fmt.Errorf("%s: unknown doctest kind %q (run, help, synopsis, lines or skip)", b.where(), kind)
	}
	return s.String() + files.String(), false, nil
}

// splitConsole splits a block into its commands and, when it is in console
// form ("$ " prompts), the output shown after each; outs is nil otherwise.
func splitConsole(text []string) (cmds []string, outs [][]string) {
	console := slices.ContainsFunc(text, func(l string) bool { return strings.HasPrefix(l, "$ ") })
	for _, l := range text {
		switch {
		case !console:
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
				cmds = append(cmds, l)
			}
		case strings.HasPrefix(l, "$ "):
			cmds = append(cmds, strings.TrimPrefix(l, "$ "))
			outs = append(outs, []string{})
		case len(outs) > 0:
			outs[len(outs)-1] = append(outs[len(outs)-1], l)
		}
	}
	return cmds, outs
}

// matchElided reports whether got's lines are want's, where a want line
// "..." stands for any number of lines.
func matchElided(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." {
		for i := 0; i <= len(got); i++ {
			if matchElided(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && want[0] == got[0] && matchElided(want[1:], got[1:])
}

// splitLines is s's lines without the final newline's empty one.
func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// docOutCmd is `docout FILE`: the last command's stdout must match FILE,
// "..." lines standing for any lines.
func docOutCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: docout FILE")
	}
	want, got := splitLines(ts.ReadFile(args[0])), splitLines(ts.ReadFile("stdout"))
	if !matchElided(want, got) {
		ts.Fatalf("the doc shows:\n%s\nkeel printed:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
}

// docLinesCmd is `doclines FILE`: each line of FILE but "#" comments must
// be a line of the last command's stdout.
func docLinesCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: doclines FILE")
	}
	got := splitLines(ts.ReadFile("stdout"))
	var missing []string
	for _, l := range splitLines(ts.ReadFile(args[0])) {
		if strings.HasPrefix(l, "#") || strings.TrimSpace(l) == "" {
			continue
		}
		if !slices.Contains(got, l) {
			missing = append(missing, l)
		}
	}
	if len(missing) > 0 {
		ts.Fatalf("the doc shows lines keel does not print:\n%s\nkeel printed:\n%s", strings.Join(missing, "\n"), strings.Join(got, "\n"))
	}
}

var (
	// synFlagRE is a flag in a synopsis: -c, --dry-run.
	synFlagRE = regexp.MustCompile(`(?:^|[\s\[|(])--?([a-zA-Z][a-zA-Z0-9-]*)`)
	// helpFlagRE is a flag line of Go's flag.PrintDefaults.
	helpFlagRE = regexp.MustCompile(`^  -([a-zA-Z][a-zA-Z0-9-]*)`)
)

// docFlagsCmd is `docflags FILE`: FILE, a synopsis, must name every flag
// of the last command's help (stdout) and no other.
func docFlagsCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: docflags FILE")
	}
	var doc, help []string
	for _, l := range splitLines(ts.ReadFile(args[0])) {
		// A shell comment after a synopsis says what it does; its
		// words are no flags of keel's.
		l, _, _ = strings.Cut(l, " #")
		for _, m := range synFlagRE.FindAllStringSubmatch(l, -1) {
			doc = append(doc, m[1])
		}
	}
	var aliases []string
	lines := splitLines(ts.ReadFile("stdout"))
	for i, l := range lines {
		if m := helpFlagRE.FindStringSubmatch(l); m != nil {
			help = append(help, m[1])
			// An alias ("same as --size SIZE", recommend's -L) need
			// not be in the synopsis when its flag is.
			if i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "same as -") {
				aliases = append(aliases, m[1])
			}
		}
	}
	var missing, unknown []string
	for _, f := range help {
		if !slices.Contains(doc, f) && !slices.Contains(aliases, f) {
			missing = append(missing, "-"+f)
		}
	}
	for _, f := range doc {
		if !slices.Contains(help, f) && !slices.Contains(unknown, "-"+f) {
			unknown = append(unknown, "-"+f)
		}
	}
	if len(missing)+len(unknown) > 0 {
		ts.Fatalf("the synopsis leaves out %v and names flags the command does not have: %v", missing, unknown)
	}
}

// docFiles are the Markdown files whose code blocks TestDocs runs.
func docFiles(root string) ([]string, error) {
	md, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	files := []string{"README.md"}
	for _, f := range md {
		files = append(files, filepath.Join("docs", filepath.Base(f)))
	}
	return files, nil
}

// TestDocs runs the command examples of README.md and docs/*.md (see the
// comment at the top of this file for the convention).
func TestDocs(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files, err := docFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run, skipped := 0, 0
	for _, f := range files {
		blocks, problems, err := readDocBlocks(root, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Error(p)
		}
		for _, b := range blocks {
			if b.annot == "" {
				if isCommandBlock(b) {
					t.Errorf("%s: a command block without a doctest comment: run it (<!-- doctest: run -->, help, synopsis, lines) or say why not (<!-- doctest: skip REASON -->); cmd/keel/docs_test.go", b.where())
				}
				continue
			}
			script, skip, err := docScript(b)
			if err != nil {
				t.Error(err)
				continue
			}
			if skip {
				skipped++
				continue
			}
			name := strings.NewReplacer("/", "_", ".md", "").Replace(f) + "_" + strconv.Itoa(b.line) + ".txtar"
			if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o644); err != nil {
				t.Fatal(err)
			}
			run++
		}
	}
	if t.Failed() {
		return
	}
	t.Logf("%d doc blocks run, %d exempted", run, skipped)
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: dir,
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"exits":    exitsCmd,
			"docout":   docOutCmd,
			"doclines": docLinesCmd,
			"docflags": docFlagsCmd,
		},
		Setup: func(env *testscript.Env) error {
			env.Setenv("KEEL_CACHE_DIR", filepath.Join(env.WorkDir, ".keel-cache"))
			env.Setenv("KEEL_STATE_DIR", filepath.Join(env.WorkDir, ".keel-state"))
			// The doc's relative paths (examples/..., reconcile/...)
			// resolve in the repository; what a command writes stays in
			// the work directory.
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".") {
					continue
				}
				if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(env.WorkDir, e.Name())); err != nil {
					return err
				}
			}
			return nil
		},
	})
}

// TestReadDocBlocks holds the convention TestDocs reads: fenced and
// indented blocks, a comment that classifies the block after it, a stale
// comment, and which blocks count as commands.
func TestReadDocBlocks(t *testing.T) {
	dir := t.TempDir()
	md := "# t\n\n" +
		"<!-- doctest: help check -->\n```\nusage: keel check\n```\n\n" + // 3, block at 4
		"text\n\n    keel status --node x\n\n" + // indented, unclassified, at 10
		"<!-- doctest: skip a guest -->\n\n    make e2e\n\n" + // 12, block at 14
		"```cue\nkeel: 1\n```\n\n" + // data, at 16
		"```\n[Service]\n```\n\n" + // no command, at 20
		"- item\n\n  <!-- doctest: run -->\n  ```console\n  $ keel version\n  ```\n\n" + // 26, block at 27
		"<!-- doctest: run -->\nprose ends it\n" // stale, at 31
	if err := os.WriteFile(filepath.Join(dir, "t.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	blocks, problems, err := readDocBlocks(dir, "t.md")
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		line    int
		annot   string
		command bool
	}
	var have []got
	for _, b := range blocks {
		have = append(have, got{b.line, b.annot, isCommandBlock(b)})
	}
	want := []got{{4, "help check", true}, {10, "", true}, {14, "skip a guest", true}, {16, "", false}, {20, "", false}, {27, "run", true}}
	if !slices.Equal(have, want) {
		t.Errorf("blocks %+v, want %+v", have, want)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], "t.md:31: doctest comment precedes no code block") {
		t.Errorf("problems %q, want the stale comment at line 31", problems)
	}
	if blocks[1].text[0] != "keel status --node x" || blocks[5].text[0] != "$ keel version" {
		t.Errorf("block texts %q and %q, want the indentation removed", blocks[1].text, blocks[5].text)
	}
}

// TestMatchElided holds the "..." of a console block's output.
func TestMatchElided(t *testing.T) {
	for _, c := range []struct {
		want, got string
		ok        bool
	}{
		{"a\nb", "a\nb", true},
		{"a\n...\nc", "a\nb\nb2\nc", true},
		{"a\n...\nc", "a\nc", true},
		{"a\n...", "a\nb", true},
		{"a\n...\nc", "a\nb", false},
		{"a\nb", "a\nb\nc", false},
		{"a", "A", false},
	} {
		if ok := matchElided(splitLines(c.want), splitLines(c.got)); ok != c.ok {
			t.Errorf("matchElided(%q, %q) = %v, want %v", c.want, c.got, ok, c.ok)
		}
	}
}
