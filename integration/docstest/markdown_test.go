package docstest

import (
	"fmt"
	"regexp"
	"strings"
)

// A document is what the runner does for one Markdown file: its steps in
// order, and the blocks it leaves out with the reasons the document gives.
type document struct {
	path    string
	steps   []step
	skipped []skippedBlock
}

// A skippedBlock is a fenced block marked <!-- no-run: reason -->.
type skippedBlock struct {
	line   int
	reason string
}

// A step is one thing done for a document: run a command (or a script),
// or write a file.
type step struct {
	line   int    // line of the document it starts on
	script string // shell text to run; empty for a file
	file   string // a file to write (<!-- file: NAME -->), with body
	body   string
	// want is the output the document shows for the command (in the
	// transcript under it, or in a block marked <!-- output -->); shown
	// says whether it shows any, and wantLine where.
	want     string
	shown    bool
	wantLine int
}

// runnable are the info strings of fenced blocks the runner runs.
var runnable = map[string]bool{"sh": true, "shell": true, "bash": true, "console": true}

// directiveRE matches the HTML comment a directive is written in.
var directiveRE = regexp.MustCompile(`^<!--\s*(.*?)\s*-->$`)

// fence is one fenced block of a document.
type fence struct {
	line      int // line of the opening fence, from 1
	info      string
	lines     []string // the content, the fence's indentation removed
	directive string   // the directive comment right before it, if any
	dirLine   int
}

// parseDocument turns a Markdown file into the runner's steps. It fails
// on a document the runner cannot read unambiguously: an unknown or
// malformed directive, a transcript ($ prompts) in a block it would not
// run, an output block with no command before it.
func parseDocument(path, text string) (*document, error) {
	fences, err := splitFences(text)
	if err != nil {
		return nil, fmt.Errorf("%s:%v", path, err)
	}
	doc := &document{path: path}
	for _, f := range fences {
		if err := doc.add(f); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, f.line, err)
		}
	}
	return doc, nil
}

// add adds the steps of one fenced block.
func (d *document) add(f fence) error {
	kind, arg, _ := strings.Cut(f.directive, ":")
	kind, arg = strings.TrimSpace(kind), strings.TrimSpace(arg)
	switch {
	case f.directive == "":
	case kind == "no-run":
		if arg == "" {
			return fmt.Errorf("<!-- no-run: REASON -->: say why the block cannot run")
		}
		d.skipped = append(d.skipped, skippedBlock{f.line, arg})
		return nil
	case kind == "output" && arg == "":
		if len(d.steps) == 0 || d.steps[len(d.steps)-1].script == "" {
			return fmt.Errorf("<!-- output --> with no command before it")
		}
		last := &d.steps[len(d.steps)-1]
		if last.shown {
			return fmt.Errorf("<!-- output --> for a command whose output is shown already (line %d)", last.wantLine)
		}
		last.want, last.shown, last.wantLine = strings.Join(f.lines, "\n"), true, f.line
		return nil
	case kind == "file" && arg != "":
		if strings.ContainsAny(arg, "/ \t") {
			return fmt.Errorf("<!-- file: %s -->: a plain file name", arg)
		}
		d.steps = append(d.steps, step{line: f.line, file: arg, body: strings.Join(f.lines, "\n") + "\n"})
		return nil
	default:
		return fmt.Errorf("unknown directive <!-- %s --> before a block (no-run: REASON, output, file: NAME)", f.directive)
	}
	if !runnable[f.info] {
		for _, l := range f.lines {
			if strings.HasPrefix(l, "$ ") {
				return fmt.Errorf("a transcript ($ prompts) in a %q block: tag it sh or console, or mark it <!-- no-run: REASON -->", f.info)
			}
		}
		return nil
	}
	steps, err := blockSteps(f)
	if err != nil {
		return err
	}
	d.steps = append(d.steps, steps...)
	return nil
}

// seedsDemo reports whether the document runs `berth demo` itself.
func (d *document) seedsDemo() bool {
	for _, s := range d.steps {
		if demoRE.MatchString(s.script) {
			return true
		}
	}
	return false
}

var demoRE = regexp.MustCompile(`(^|[\s/])berth demo\b`)

// blockSteps reads a runnable block: a transcript when a line starts with
// "$ " (each command up to where it is complete, then its output up to
// the next prompt), else one script whose output is not shown.
func blockSteps(f fence) ([]step, error) {
	transcript := false
	for _, l := range f.lines {
		if strings.HasPrefix(l, "$ ") {
			transcript = true
			break
		}
	}
	if !transcript {
		return []step{{line: f.line + 1, script: strings.Join(f.lines, "\n") + "\n"}}, nil
	}
	var steps []step
	for i := 0; i < len(f.lines); {
		l := f.lines[i]
		if !strings.HasPrefix(l, "$ ") {
			if strings.TrimSpace(l) != "" {
				return nil, fmt.Errorf("line %d: text before the first $ prompt", f.line+1+i)
			}
			i++
			continue
		}
		s := step{line: f.line + 1 + i}
		cmd := []string{strings.TrimPrefix(l, "$ ")}
		for i++; !complete(strings.Join(cmd, "\n")); i++ {
			if i == len(f.lines) {
				return nil, fmt.Errorf("line %d: the command does not end (an open quote, here-document or trailing \\)", s.line)
			}
			cmd = append(cmd, f.lines[i])
		}
		s.script = strings.Join(cmd, "\n") + "\n"
		s.wantLine = f.line + 1 + i
		var out []string
		for ; i < len(f.lines) && !strings.HasPrefix(f.lines[i], "$ "); i++ {
			out = append(out, f.lines[i])
		}
		s.want = strings.Join(out, "\n")
		s.shown = strings.TrimSpace(s.want) != ""
		steps = append(steps, s)
	}
	return steps, nil
}

// splitFences finds the fenced blocks of a Markdown text (``` or ~~~,
// possibly indented, as in a list) and the directive comment on the
// nearest non-blank line before each.
func splitFences(text string) ([]fence, error) {
	lines := strings.Split(text, "\n")
	var out []fence
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimLeft(lines[i], " ")
		marker := fenceMarker(trimmed)
		if marker == "" {
			continue
		}
		indent := len(lines[i]) - len(trimmed)
		f := fence{line: i + 1, info: strings.TrimSpace(strings.TrimPrefix(trimmed, marker))}
		if sp := strings.IndexAny(f.info, " \t{"); sp >= 0 {
			f.info = f.info[:sp]
		}
		for j := i - 1; j >= 0; j-- {
			prev := strings.TrimSpace(lines[j])
			if prev == "" {
				continue
			}
			if m := directiveRE.FindStringSubmatch(prev); m != nil && isDirective(m[1]) {
				f.directive, f.dirLine = m[1], j+1
			}
			break
		}
		closed := false
		for i++; i < len(lines); i++ {
			l := lines[i]
			if t := strings.TrimLeft(l, " "); strings.HasPrefix(t, marker) && strings.TrimSpace(strings.TrimLeft(t, marker[:1])) == "" {
				closed = true
				break
			}
			for k := 0; k < indent && strings.HasPrefix(l, " "); k++ {
				l = l[1:]
			}
			f.lines = append(f.lines, l)
		}
		if !closed {
			return nil, fmt.Errorf("%d: the block is not closed", f.line)
		}
		out = append(out, f)
	}
	return out, nil
}

// isDirective reports whether an HTML comment's text is meant for the
// runner (then it must be a valid directive); other comments are prose.
func isDirective(s string) bool {
	for _, p := range []string{"no-run", "output", "file"} {
		if s == p || strings.HasPrefix(s, p+":") || strings.HasPrefix(s, p+" ") {
			return true
		}
	}
	return false
}

// fenceMarker returns the fence a line opens (``` or ~~~, or longer), or
// "".
func fenceMarker(line string) string {
	for _, c := range []string{"`", "~"} {
		n := len(line) - len(strings.TrimLeft(line, c))
		if n >= 3 {
			return line[:n]
		}
	}
	return ""
}

// complete reports whether a shell command line is complete: no quote
// ('...', "...", $'...') or here-document left open, and no trailing
// backslash, | or &&. A # starting a word begins a comment to the end of
// its line.
// Braces and parentheses are not counted: write a function on one line,
// or in a script block.
func complete(cmd string) bool {
	const (
		normal = iota
		single
		double
		ansi
	)
	state := normal
	var heredocs []string
	var code string // the last line's code outside quotes, comment left out
	lines := strings.Split(cmd, "\n")
	for li := 0; li < len(lines); li++ {
		l := lines[li]
		if len(heredocs) > 0 && state == normal {
			if strings.TrimLeft(l, "\t") == heredocs[0] {
				heredocs = heredocs[1:]
			}
			code = ""
			continue
		}
		code = l
		for i := 0; i < len(l); i++ {
			c := l[i]
			switch state {
			case single:
				if c == '\'' {
					state = normal
				}
			case double, ansi:
				switch {
				case c == '\\':
					i++
				case c == '"' && state == double, c == '\'' && state == ansi:
					state = normal
				}
			default:
				switch {
				case c == '\\':
					if i == len(l)-1 {
						if li == len(lines)-1 {
							return false
						}
					}
					i++
				case c == '\'':
					state = single
				case c == '"':
					state = double
				case c == '$' && i+1 < len(l) && l[i+1] == '\'':
					state, i = ansi, i+1
				case c == '#' && (i == 0 || strings.ContainsRune(" \t;|&(", rune(l[i-1]))):
					code, i = l[:i], len(l)
				case strings.HasPrefix(l[i:], "<<<"):
					i += 2
				case strings.HasPrefix(l[i:], "<<"):
					word, n := heredocWord(l[i+2:])
					if word != "" {
						heredocs = append(heredocs, word)
					}
					i += 1 + n
				}
			}
		}
	}
	code = strings.TrimSpace(code)
	return state == normal && len(heredocs) == 0 && !strings.HasSuffix(code, "|") && !strings.HasSuffix(code, "&&")
}

// heredocWord reads the delimiter after "<<" (an optional -, blanks, the
// word, quoted or not) and returns it with the bytes it took.
func heredocWord(s string) (string, int) {
	n := 0
	if strings.HasPrefix(s, "-") {
		n++
	}
	for n < len(s) && (s[n] == ' ' || s[n] == '\t') {
		n++
	}
	start := n
	for n < len(s) && !strings.ContainsRune(" \t;|&<>()", rune(s[n])) {
		n++
	}
	return strings.Trim(s[start:n], `'"`), n
}
