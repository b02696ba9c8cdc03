package cli

import (
	"math"
	"strings"
	"testing"
)

func TestBar(t *testing.T) {
	for _, tc := range []struct {
		f     float64
		width int
		want  string
	}{
		{0, 10, "░░░░░░░░░░"},
		{0.7, 10, "███████░░░"},
		{1, 10, "██████████"},
		{1.5, 4, "████"},          // clamped
		{-1, 4, "░░░░"},           // clamped
		{math.NaN(), 4, "░░░░"},   // 0/0
		{0.125, 1, "▏"},           // one eighth of one cell
		{0.55, 4, "██▎░"},         // 2.2 cells: 17.6 eighths round to 18 = 2 full + 2/8
		{0.5 / 8, 8, "▌░░░░░░░"},  // half a cell
		{1.0 / 3, 3, "█░░"},       // exactly one cell
		{0.999, 10, "██████████"}, // rounds up to full
		{0.001, 10, "░░░░░░░░░░"}, // rounds down to nothing
		{0.7, 20, "██████████████░░░░░░"},
	} {
		got := Bar(tc.f, tc.width)
		if got != tc.want {
			t.Errorf("Bar(%v, %d) = %q, want %q", tc.f, tc.width, got, tc.want)
		}
		if Width(got) != tc.width {
			t.Errorf("Bar(%v, %d) is %d cells wide", tc.f, tc.width, Width(got))
		}
	}
}

func TestUsageBar(t *testing.T) {
	bar, pct, ratio := UsageBar(14, 20, 10)
	if bar != "███████░░░" || pct != "70%" || ratio != "14/20" {
		t.Errorf("UsageBar(14, 20) = %q %q %q", bar, pct, ratio)
	}
	bar, pct, ratio = UsageBar(3, 0, 5)
	if bar != "░░░░░" || pct != "-" || ratio != "3/0" {
		t.Errorf("UsageBar(3, 0) = %q %q %q", bar, pct, ratio)
	}
	if _, pct, _ = UsageBar(1080, 3907600, 5); pct != "<1%" {
		t.Errorf("a little usage shows %q", pct)
	}
	if _, pct, _ = UsageBar(0, 3907600, 5); pct != "0%" {
		t.Errorf("no usage shows %q", pct)
	}
	// Capacity with an allocation ratio is fractional.
	if _, _, ratio = UsageBar(1, 7.5, 5); ratio != "1/7.5" {
		t.Errorf("ratio = %q", ratio)
	}
}

func TestRenderTree(t *testing.T) {
	root, child, other := "r", "c", "o"
	ps := []*provider{
		{UUID: child, Name: "cn1_numa0", ParentUUID: &root, RootUUID: root,
			Inventories: map[string]inventory{"CUSTOM_GOLD": {Total: 4, AllocationRatio: 1}},
			Usages:      map[string]int64{"CUSTOM_GOLD": 1}},
		{UUID: other, Name: "cn2", RootUUID: other,
			Inventories: map[string]inventory{"VCPU": {Total: 4, AllocationRatio: 1}}},
		{UUID: root, Name: "cn1", RootUUID: root,
			Inventories: map[string]inventory{
				"VCPU":      {Total: 8, AllocationRatio: 2},
				"MEMORY_MB": {Total: 4096, Reserved: 0, AllocationRatio: 1}},
			Usages: map[string]int64{"VCPU": 2, "MEMORY_MB": 512}},
	}
	var b strings.Builder
	RenderTree(ps, 8).Render(&b)
	want := "" +
		"cn1  r\n" +
		"├─ MEMORY_MB       █░░░░░░░  12%  512/4096\n" +
		"├─ VCPU            █░░░░░░░  12%      2/16\n" +
		"└─ cn1_numa0  c\n" +
		"   └─ CUSTOM_GOLD  ██░░░░░░  25%       1/4\n" +
		"cn2  o\n" +
		"└─ VCPU            ░░░░░░░░   0%       0/4\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestProgressLine(t *testing.T) {
	if got, want := ProgressLine("seed", 250, 1000), "seed █████░░░░░░░░░░░░░░░  25% 250/1000"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := ProgressLine("x", 0, 0); !strings.Contains(got, "0/0") {
		t.Errorf("got %q", got)
	}
}

func TestProgressOffWritesNothing(t *testing.T) {
	var b strings.Builder
	p := NewProgress(&b, false, "providers", 3)
	p.Add(1)
	p.Set(3, 3)
	p.Clear()
	if b.Len() != 0 {
		t.Errorf("progress off wrote %q", b.String())
	}
	p = NewProgress(&b, true, "providers", 2)
	p.Add(2) // the last item always draws
	p.Clear()
	if !strings.Contains(b.String(), "2/2") || !strings.HasSuffix(b.String(), "\r\x1b[K") {
		t.Errorf("progress on wrote %q", b.String())
	}
}
