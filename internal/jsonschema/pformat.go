package jsonschema

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// PFormat renders a decoded JSON value (map[string]any, []any, string,
// json.Number, float64, int, bool, nil) as Python 3.11's
// pprint.pformat(value, width=width) renders the value json.loads would
// have produced: the one-line repr when it fits, otherwise dicts (keys
// sorted) and lists one item a line, and long strings split at word
// boundaries into adjacent literals, in parentheses at the top level.
// Widths count characters (code points), as Python's len does.
//
// It follows PrettyPrinter._format and its _pprint_dict, _pprint_list and
// _pprint_str with indent=1, depth=None, compact=False, sort_dicts=True.
func PFormat(v any, width int) string {
	p := pformatter{width: width}
	p.format(v, 0, 0, 0)
	return p.b.String()
}

type pformatter struct {
	width int
	b     strings.Builder
}

// format is PrettyPrinter._format: the value's repr if it fits in what is
// left of the line (width - indent - allowance, where allowance is what
// must still follow it on its last line), else the value laid out over
// several lines by its type's printer.
func (p *pformatter) format(v any, indent, allowance, level int) {
	rep := pyRepr(v)
	if utf8.RuneCountInString(rep) <= p.width-indent-allowance {
		p.b.WriteString(rep)
		return
	}
	switch t := v.(type) {
	case map[string]any:
		p.dict(t, indent, allowance, level+1)
	case []any:
		p.list(t, indent, allowance, level+1)
	case string:
		p.str(t, rep, indent, allowance, level+1)
	default:
		p.b.WriteString(rep)
	}
}

// dict is _pprint_dict with _format_dict_items: one "key: value" a line,
// each value laid out at the column after its key, all but the last
// followed by a comma.
func (p *pformatter) dict(m map[string]any, indent, allowance, level int) {
	p.b.WriteByte('{')
	keys := sortedKeys(m)
	indent++
	allowance++ // the closing brace
	for i, k := range keys {
		last := i == len(keys)-1
		rep := pyRepr(k)
		p.b.WriteString(rep)
		p.b.WriteString(": ")
		a := 1 // the comma
		if last {
			a = allowance
		}
		p.format(m[k], indent+utf8.RuneCountInString(rep)+2, a, level)
		if !last {
			p.b.WriteString(",\n")
			p.b.WriteString(strings.Repeat(" ", indent))
		}
	}
	p.b.WriteByte('}')
}

// list is _pprint_list with _format_items (not compact): one item a line.
func (p *pformatter) list(l []any, indent, allowance, level int) {
	p.b.WriteByte('[')
	indent++
	allowance++ // the closing bracket
	for i, e := range l {
		last := i == len(l)-1
		if i > 0 {
			p.b.WriteString(",\n")
			p.b.WriteString(strings.Repeat(" ", indent))
		}
		a := 1
		if last {
			a = allowance
		}
		p.format(e, indent, a, level)
	}
	p.b.WriteByte(']')
}

// str is _pprint_str: the string cut into its lines (str.splitlines with
// the ends kept), each line that does not fit cut again after runs of
// whitespace into the longest pieces that fit, every piece written as its
// own literal on its own line; at the top level (level 1) in parentheses.
// rep is the string's repr.
func (p *pformatter) str(s, rep string, indent, allowance, level int) {
	if s == "" {
		p.b.WriteString(rep)
		return
	}
	if level == 1 {
		indent++
		allowance++
	}
	maxWidth := p.width - indent
	maxWidth1 := maxWidth
	lines := pySplitLines(s)
	var chunks []string
	for i, line := range lines {
		lastLine := i == len(lines)-1
		r := pyString(line)
		if lastLine {
			maxWidth1 -= allowance
		}
		if utf8.RuneCountInString(r) <= maxWidth1 {
			chunks = append(chunks, r)
			continue
		}
		parts := pyWordParts(line)
		maxWidth2 := maxWidth
		current := ""
		for j, part := range parts {
			candidate := current + part
			if j == len(parts)-1 && lastLine {
				maxWidth2 -= allowance
			}
			if utf8.RuneCountInString(pyString(candidate)) > maxWidth2 {
				if current != "" {
					chunks = append(chunks, pyString(current))
				}
				current = part
			} else {
				current = candidate
			}
		}
		if current != "" {
			chunks = append(chunks, pyString(current))
		}
	}
	if len(chunks) == 1 {
		p.b.WriteString(rep)
		return
	}
	if level == 1 {
		p.b.WriteByte('(')
	}
	for i, c := range chunks {
		if i > 0 {
			p.b.WriteByte('\n')
			p.b.WriteString(strings.Repeat(" ", indent))
		}
		p.b.WriteString(c)
	}
	if level == 1 {
		p.b.WriteByte(')')
	}
}

// pySplitLines is Python's str.splitlines(keepends=True): lines end at
// \n, \r, \r\n, \v, \f, \x1c, \x1d, \x1e, \x85, \u2028 and \u2029.
func pySplitLines(s string) []string {
	var lines []string
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		end := -1
		switch r {
		case '\r':
			end = i + 1
			if i+1 < len(s) && s[i+1] == '\n' {
				end = i + 2
			}
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			end = i + size
		}
		if end < 0 {
			i += size
			continue
		}
		lines = append(lines, s[start:end])
		start, i = end, end
	}
	if start < len(s) {
		lines = append(lines, s[start:])
	}
	return lines
}

// pyWordParts is re.findall(r'\S*\s*', line) without its final empty
// match: the line cut after each run of whitespace.
func pyWordParts(line string) []string {
	var parts []string
	start, inSpace := 0, false
	for i, r := range line {
		sp := pyIsSpace(r)
		if !sp && inSpace {
			parts = append(parts, line[start:i])
			start = i
		}
		inSpace = sp
	}
	if start < len(line) {
		parts = append(parts, line[start:])
	}
	return parts
}

// pyIsSpace is what \s matches in a Python str pattern (str.isspace):
// Unicode white space plus the separators \x1c to \x1f.
func pyIsSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}
