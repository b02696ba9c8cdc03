package resources

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// TestWriteAnswerDecodesAsPgx checks that writeAnswer decodes the binary
// arrays of a write's answer to exactly what pgx scans from them (times
// in the same location, to the microsecond), and leaves an array with a
// NULL to pgx.
func TestWriteAnswerDecodesAsPgx(t *testing.T) {
	m := pgtype.NewMap()
	times := []time.Time{time.Now(), time.Date(1999, 12, 31, 23, 59, 59, 123456000, time.UTC), time.Date(1970, 1, 1, 0, 0, 0, 1000, time.UTC), time.Date(1850, 3, 1, 1, 2, 3, 999999000, time.UTC), time.Date(2200, 3, 1, 1, 2, 3, 1000, time.UTC)}
	src, err := m.Encode(pgtype.TimestamptzArrayOID, 1, times, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []time.Time
	if err := m.Scan(pgtype.TimestamptzArrayOID, 1, src, &want); err != nil {
		t.Fatal(err)
	}
	var a writeAnswer
	var got []time.Time
	if !a.decode(pgtype.TimestamptzArrayOID, src, &got) {
		t.Fatal("not decoded")
	}
	for i := range want {
		if !got[i].Equal(want[i]) || got[i].Location() != want[i].Location() || got[i] != want[i] {
			t.Fatalf("%d: %v vs %v", i, got[i], want[i])
		}
	}
	for _, oid := range []uint32{pgtype.Int8ArrayOID, pgtype.Int4ArrayOID} {
		ints := []int64{1, -5, 1 << 30, 0}
		if oid == pgtype.Int8ArrayOID {
			ints = append(ints, 1<<40)
		}
		src, err := m.Encode(oid, 1, ints, nil)
		if err != nil {
			t.Fatal(err)
		}
		var w, g []int64
		if err := m.Scan(oid, 1, src, &w); err != nil {
			t.Fatal(err)
		}
		if !a.decode(oid, src, &g) || len(g) != len(w) {
			t.Fatal("ints", g, w)
		}
		for i := range w {
			if g[i] != w[i] {
				t.Fatal(g, w)
			}
		}
		empty, _ := m.Encode(oid, 1, []int64{}, nil)
		var e []int64
		if !a.decode(oid, empty, &e) || e == nil || len(e) != 0 {
			t.Fatal("empty", e)
		}
		withNull, _ := m.Encode(oid, 1, []*int64{nil}, nil)
		if a.decode(oid, withNull, &e) {
			t.Fatal("null decoded")
		}
	}
}
