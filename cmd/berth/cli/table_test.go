package cli

import (
	"strings"
	"testing"
)

func TestWidth(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
	}{
		{"", 0},
		{"cn1", 3},
		{"███░", 4},
		{"├─ VCPU", 7},
		{"計算ノード", 10},
		{"e\u0301", 1}, // e + combining acute
		{"ｆｕｌｌ", 8},
		{"tab\x00", 3},
	} {
		if got := Width(tc.s); got != tc.want {
			t.Errorf("Width(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
}

func TestTableAlignsByCells(t *testing.T) {
	tb := NewTable("NAME", "FITS", "LIMITING").AlignRight(1)
	tb.Row("cn1", "3", "MEMORY_MB")
	tb.Row("計算1", "12", "-")
	tb.Line("a verbatim line that is longer than every column")
	tb.Row("x", "100", "VCPU,DISK_GB")
	var b strings.Builder
	if err := tb.Render(&b); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"NAME   FITS  LIMITING\n" +
		"cn1       3  MEMORY_MB\n" +
		"計算1    12  -\n" +
		"a verbatim line that is longer than every column\n" +
		"x       100  VCPU,DISK_GB\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestTableWithoutHeader(t *testing.T) {
	tb := NewTable()
	if tb.Len() != 0 {
		t.Fatal("new table not empty")
	}
	tb.Row("a", "b")
	tb.Row("ccc", "")
	var b strings.Builder
	tb.Render(&b)
	if want := "a    b\nccc\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
