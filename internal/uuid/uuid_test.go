package uuid

import (
	"strings"
	"testing"
)

func TestValidAndCanonical(t *testing.T) {
	const want = "7d2a6c1e-3b4f-4a5e-9c8d-0123456789ab"
	for _, in := range []string{
		want,
		"7D2A6C1E-3B4F-4A5E-9C8D-0123456789AB",
		"7d2a6c1e3b4f4a5e9c8d0123456789ab",
		"{7d2a6c1e-3b4f-4a5e-9c8d-0123456789ab}",
		"urn:uuid:7d2a6c1e-3b4f-4a5e-9c8d-0123456789ab",
	} {
		if !Valid(in) {
			t.Errorf("Valid(%q) = false", in)
		}
		if got, ok := Canonical(in); !ok || got != want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "x", "7d2a6c1e-3b4f-4a5e-9c8d-0123456789a", "7d2a6c1e-3b4f-4a5e-9c8d-0123456789abc"} {
		if Valid(in) {
			t.Errorf("Valid(%q) = true", in)
		}
		if _, ok := Canonical(in); ok {
			t.Errorf("Canonical(%q) ok", in)
		}
	}
}

func TestNewAndFromName(t *testing.T) {
	a, b := New(), New()
	if a == b || !Valid(a) || a[14] != '4' {
		t.Errorf("New() = %q, %q: want two different version 4 UUIDs", a, b)
	}
	// RFC 4122 appendix B's example, corrected by its errata: the DNS
	// namespace and "www.example.com".
	dns := [16]byte{0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}
	if got, want := FromName(dns, "www.example.com"), "2ed6657d-e927-568b-95e1-2665a8aea6a2"; got != want {
		t.Errorf("FromName = %q, want %q", got, want)
	}
	if FromName(dns, "a") != FromName(dns, "a") || FromName(dns, "a") == FromName(dns, "b") {
		t.Error("FromName is not a function of the name")
	}
}

// TestNewPrefixed: the prefix, then a new version 4 UUID in canonical
// form, each call another.
func TestNewPrefixed(t *testing.T) {
	a, b := NewPrefixed("req-"), NewPrefixed("req-")
	if a == b || len(a) != 40 || a[:4] != "req-" || !Valid(a[4:]) || a[18] != '4' {
		t.Errorf("NewPrefixed = %q, %q: want req- and two different version 4 UUIDs", a, b)
	}
	if c, ok := Canonical(a[4:]); !ok || c != a[4:] {
		t.Errorf("%q is not canonical (%q)", a[4:], c)
	}
	// Across the random pool's refills (sixteen UUIDs each): every id
	// another, each of version 4 and RFC 4122's variant.
	seen := map[string]bool{}
	for range 3*16 + 1 {
		id := NewPrefixed("req-")
		if seen[id] || id[18] != '4' || !strings.ContainsRune("89ab", rune(id[23])) {
			t.Fatalf("NewPrefixed = %q: repeated or not version 4, variant 10", id)
		}
		seen[id] = true
	}
	joined := testing.AllocsPerRun(10, func() { _ = "req-" + New() })
	if n := testing.AllocsPerRun(10, func() { _ = NewPrefixed("req-") }); n >= joined {
		t.Errorf("NewPrefixed allocates %v times, \"req-\" + New() %v", n, joined)
	}
}

func TestBytes(t *testing.T) {
	const s = "6c78642d-6576-6163-7561-746500000001"
	b, ok := Bytes(s)
	want := [16]byte{0x6c, 0x78, 0x64, 0x2d, 0x65, 0x76, 0x61, 0x63, 0x75, 0x61, 0x74, 0x65, 0x00, 0x00, 0x00, 0x01}
	if !ok || b != want {
		t.Fatalf("Bytes(%q) = %x, %v; want %x, true", s, b, ok, want)
	}
	// Only the canonical form: what Canonical accepts otherwise is refused.
	for _, in := range []string{
		"6C78642D-6576-6163-7561-746500000001",
		"6c78642d65766163756174650000000l",
		"6c78642d6576616375617465000000010",
		"{6c78642d-6576-6163-7561-746500000001}",
		"6c78642d-6576-6163-7561-74650000000g",
		"6c78642d-6576-6163-7561+746500000001",
		"",
	} {
		if b, ok := Bytes(in); ok {
			t.Errorf("Bytes(%q) = %x, true; want false", in, b)
		}
	}
}

// BenchmarkNewPrefixed is a request's id.
func BenchmarkNewPrefixed(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = NewPrefixed("req-")
	}
}

// TestValidCanonicalShortcut checks Valid's shortcut: what isCanonical
// takes, oslo's reading (hexDigits) takes too, and Valid costs no
// allocation for it.
func TestValidCanonicalShortcut(t *testing.T) {
	for range 100 {
		s := New()
		if !isCanonical(s) {
			t.Fatalf("isCanonical(%q) = false", s)
		}
		if h, ok := hexDigits(s); !ok || h != strings.ReplaceAll(s, "-", "") {
			t.Fatalf("hexDigits(%q) = %q, %v", s, h, ok)
		}
	}
	s := New()
	if n := testing.AllocsPerRun(10, func() { Valid(s) }); n != 0 {
		t.Fatalf("Valid(%q) allocates %v times", s, n)
	}
}
