package cli

import (
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Table is rows of cells printed in aligned columns, two spaces apart.
// Column widths count terminal cells, not bytes or runes: wide (East
// Asian) characters take two, combining marks none. A row of exactly one
// line added with Line is printed as is and does not widen any column.
type Table struct {
	header []string
	rows   []row
	right  map[int]bool
}

type row struct {
	cells    []string
	verbatim bool // one cell printed as is, outside the columns
}

// NewTable starts a table with the given column titles (none: no header).
func NewTable(header ...string) *Table { return &Table{header: header, right: map[int]bool{}} }

// AlignRight right-aligns the given columns (numbers).
func (t *Table) AlignRight(cols ...int) *Table {
	for _, c := range cols {
		t.right[c] = true
	}
	return t
}

// Row adds a row of cells, each made Printable.
func (t *Table) Row(cells ...string) {
	safe := make([]string, len(cells))
	for i, c := range cells {
		safe[i] = Printable(c)
	}
	t.rows = append(t.rows, row{cells: safe})
}

// Line adds a line printed verbatim (but Printable), outside the columns.
func (t *Table) Line(s string) {
	t.rows = append(t.rows, row{cells: []string{Printable(s)}, verbatim: true})
}

// Len is the number of rows, verbatim lines included.
func (t *Table) Len() int { return len(t.rows) }

// Render writes the table to w. Trailing spaces are trimmed.
func (t *Table) Render(w io.Writer) error {
	all := t.rows
	if len(t.header) > 0 {
		all = append([]row{{cells: t.header}}, t.rows...)
	}
	var widths []int
	for _, r := range all {
		if r.verbatim {
			continue
		}
		for i, c := range r.cells {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], Width(c))
		}
	}
	var b strings.Builder
	for _, r := range all {
		if r.verbatim {
			b.WriteString(r.cells[0])
			b.WriteByte('\n')
			continue
		}
		var line strings.Builder
		for i, c := range r.cells {
			if i > 0 {
				line.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-Width(c))
			if t.right[i] {
				line.WriteString(pad + c)
			} else {
				line.WriteString(c + pad)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Width is the number of terminal cells s takes: 2 for wide and
// full-width characters, 0 for combining marks and control characters,
// 1 otherwise (box drawing and block elements included).
func Width(s string) int {
	n := 0
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		n += runeWidth(r)
	}
	return n
}

func runeWidth(r rune) int {
	switch {
	case r < 0x20 || (r >= 0x7f && r < 0xa0):
		return 0
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	case isWide(r):
		return 2
	}
	return 1
}

// wideRanges are the East Asian Wide and Fullwidth blocks (Unicode
// EastAsianWidth W and F), coarsely: enough for names in tables.
var wideRanges = [][2]rune{
	{0x1100, 0x115f}, {0x2e80, 0x303e}, {0x3041, 0x33ff}, {0x3400, 0x4dbf},
	{0x4e00, 0x9fff}, {0xa000, 0xa4cf}, {0xac00, 0xd7a3}, {0xf900, 0xfaff},
	{0xfe30, 0xfe4f}, {0xff00, 0xff60}, {0xffe0, 0xffe6}, {0x1f300, 0x1f64f},
	{0x1f900, 0x1f9ff}, {0x20000, 0x3fffd},
}

func isWide(r rune) bool {
	if r < 0x1100 {
		return false
	}
	for _, rg := range wideRanges {
		if r >= rg[0] && r <= rg[1] {
			return true
		}
	}
	return false
}

// Printable returns s with the characters a terminal would act on instead
// of show escaped as Go escapes them: control characters (C0, DEL, C1:
// an escape sequence, a newline, a carriage return) and the bidirectional
// formatting characters, which reorder what follows. A provider named
// "a\x1b[2Jb" prints as a\x1b[2Jb, not as a cleared screen. Table cells
// go through it, and so does every line berth prints in table mode
// (terminalWriter, which keeps its own newlines).
func Printable(s string) string {
	if !needsEscape(s, false) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		writeRune(&b, r, false)
	}
	return b.String()
}

// unsafeRune reports whether a terminal acts on r rather than show it.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Bidi_Control)
}

func needsEscape(s string, keepLines bool) bool {
	for _, r := range s {
		if unsafeRune(r) && !(keepLines && (r == '\n' || r == '\t')) {
			return true
		}
	}
	return false
}

// writeRune writes r, escaped if unsafe (newlines and tabs kept when
// keepLines).
func writeRune(b *strings.Builder, r rune, keepLines bool) {
	if !unsafeRune(r) || keepLines && (r == '\n' || r == '\t') {
		b.WriteRune(r)
		return
	}
	q := strconv.QuoteRune(r) // '\x1b', '\n', '\u202e'
	b.WriteString(q[1 : len(q)-1])
}

// terminalWriter escapes what Printable escapes, but newlines and tabs:
// berth's own text is lines, and a server's strings in it must not
// drive the terminal.
type terminalWriter struct{ w io.Writer }

func (t terminalWriter) Write(p []byte) (int, error) {
	s := string(p)
	if !needsEscape(s, true) {
		return t.w.Write(p)
	}
	var b strings.Builder
	for _, r := range s {
		writeRune(&b, r, true)
	}
	if _, err := io.WriteString(t.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}
