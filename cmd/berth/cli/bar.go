package cli

import (
	"fmt"
	"math"
	"strings"
)

// eighths are the partial block characters, from one eighth to seven.
var eighths = []rune("▏▎▍▌▋▊▉")

// Bar renders fraction (clamped to 0..1) as width cells of block
// characters: full blocks, one partial block in eighths, then light
// shade for the rest, e.g. Bar(0.7, 10) = "███████░░░".
func Bar(fraction float64, width int) string {
	if math.IsNaN(fraction) || fraction < 0 {
		fraction = 0
	}
	fraction = min(fraction, 1)
	units := int(math.Round(fraction * float64(width) * 8))
	full, part := units/8, units%8
	var b strings.Builder
	b.WriteString(strings.Repeat("█", full))
	cells := full
	if part > 0 {
		b.WriteRune(eighths[part-1])
		cells++
	}
	b.WriteString(strings.Repeat("░", width-cells))
	return b.String()
}

// UsageBar is one usage row's bar, percentage and "used/capacity"
// column, e.g. ("███████░░░", "70%", "14/20"). Capacity 0 shows an empty
// bar and "-"; a usage under half a percent shows "<1%", not "0%".
func UsageBar(used, capacity float64, width int) (bar, pct, ratio string) {
	if capacity <= 0 {
		return Bar(0, width), "-", fmt.Sprintf("%s/%s", num(used), num(capacity))
	}
	f := used / capacity
	pct = fmt.Sprintf("%.0f%%", f*100)
	if used > 0 && f*100 < 0.5 {
		pct = "<1%" // in use, however little
	}
	return Bar(f, width), pct, fmt.Sprintf("%s/%s", num(used), num(capacity))
}

// num prints a whole number without decimals and others with up to two.
func num(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return fmt.Sprintf("%d", int64(f))
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", f), "0"), ".")
}
