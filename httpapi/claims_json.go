package httpapi

import (
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/ledger"
)

// writeClaim writes a claim's answer. The answer is appended directly,
// byte for byte what encoding/json makes of claimResponse(r) (keys in name
// order, no HTML escaping): a claim's answer is small, and reflection over
// its maps cost more than the rest of its encoding. A value encoding/json
// refuses (a score that is not finite) goes through encoding/json, for
// its error.
func writeClaim(c echo.Context, r *claims.Result) error {
	b, ok := appendClaim(make([]byte, 0, 2048), r)
	if !ok {
		return writeJSON(c, http.StatusOK, claimResponse(r))
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
}

// appendClaim appends r as claimResponse's JSON; false when a float is
// not finite.
func appendClaim(b []byte, r *claims.Result) ([]byte, bool) {
	ok := true
	float := func(b []byte, f float64) []byte {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			ok = false
			return b
		}
		return appendJSONFloat(b, f)
	}
	b = append(b, `{"allocations":`...)
	b = appendAllocations(b, r.Allocations)
	b = append(b, `,"alternates":[`...)
	for i, o := range r.Alternates {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"allocations":`...)
		b = appendAllocations(b, o.Allocations)
		b = append(b, `,"mappings":`...)
		b = appendMappings(b, o.Mappings)
		b = append(b, `,"root_provider_name":`...)
		b = appendJSONString(b, o.RootName)
		b = append(b, `,"root_provider_uuid":`...)
		b = appendJSONString(b, o.Root)
		b = append(b, `,"score":`...)
		b = float(b, o.Score)
		b = append(b, '}')
	}
	b = append(b, `],"attempts":`...)
	b = strconv.AppendInt(b, int64(r.Attempts), 10)
	b = append(b, `,"consumer_generation":`...)
	b = strconv.AppendInt(b, r.ConsumerGeneration, 10)
	b = append(b, `,"consumer_uuid":`...)
	b = appendJSONString(b, r.ConsumerUUID)
	b = append(b, `,"dry_run":`...)
	b = strconv.AppendBool(b, r.DryRun)
	b = append(b, `,"mappings":`...)
	b = appendMappings(b, r.Mappings)
	if r.Migration != nil {
		b = append(b, `,"migration":{"allocations":`...)
		b = appendAllocations(b, r.Migration.Allocations)
		b = append(b, `,"consumer_uuid":`...)
		b = appendJSONString(b, r.Migration.ConsumerUUID)
		b = append(b, '}')
	}
	if r.DryRun {
		b = append(b, `,"ranking":[`...)
		for i, o := range r.Ranking {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"allocations":`...)
			b = appendAllocations(b, o.Allocations)
			b = append(b, `,"rank":`...)
			b = strconv.AppendInt(b, int64(i+1), 10)
			b = append(b, `,"root_provider_name":`...)
			b = appendJSONString(b, o.RootName)
			b = append(b, `,"root_provider_uuid":`...)
			b = appendJSONString(b, o.Root)
			b = append(b, `,"score":`...)
			b = float(b, o.Score)
			b = append(b, `,"weights":`...)
			if o.Weights == nil {
				b = append(b, "null"...)
			} else {
				b = append(b, '{')
				for k, name := range slices.Sorted(maps.Keys(o.Weights)) {
					if k > 0 {
						b = append(b, ',')
					}
					b = appendJSONString(b, name)
					b = append(b, ':')
					b = float(b, o.Weights[name])
				}
				b = append(b, '}')
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"root_provider_name":`...)
	b = appendJSONString(b, r.RootName)
	b = append(b, `,"root_provider_uuid":`...)
	b = appendJSONString(b, r.Root)
	b = append(b, `,"score":`...)
	b = float(b, r.Score)
	if r.DryRun {
		b = append(b, `,"scriptlet_log":[`...)
		for i, l := range r.ScriptletLog {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"level":`...)
			b = appendJSONString(b, l.Level)
			b = append(b, `,"message":`...)
			b = appendJSONString(b, l.Message)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"steps":[`...)
	for i, st := range r.Steps {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"kind":`...)
		b = appendJSONString(b, st.Kind)
		b = append(b, `,"reasons":{`...)
		for k, reason := range slices.Sorted(maps.Keys(st.Reasons)) {
			if k > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, reason)
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(st.Reasons[reason]), 10)
		}
		b = append(b, `},"remaining":`...)
		b = strconv.AppendInt(b, int64(st.Remaining), 10)
		b = append(b, `,"removed":`...)
		b = strconv.AppendInt(b, int64(st.Removed), 10)
		b = append(b, `,"unit":`...)
		b = appendJSONString(b, st.Unit)
		b = append(b, '}')
	}
	b = append(b, "]}"...)
	return b, ok
}

// appendAllocations appends what allocationsJSON's maps encode to:
// providers, then classes, in name order, the last of duplicates winning.
func appendAllocations(b []byte, allocs []ledger.ProviderResources) []byte {
	var provBuf [8]int
	b = append(b, '{')
	for k, i := range lastByKey(provBuf[:0], len(allocs), func(i int) string { return allocs[i].ProviderUUID }) {
		if k > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, allocs[i].ProviderUUID)
		b = append(b, `:{"resources":{`...)
		res := allocs[i].Resources
		var resBuf [8]int
		for n, j := range lastByKey(resBuf[:0], len(res), func(j int) string { return res[j].Class }) {
			if n > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, res[j].Class)
			b = append(b, ':')
			b = strconv.AppendInt(b, res[j].Amount, 10)
		}
		b = append(b, "}}"...)
	}
	return append(b, '}')
}

// lastByKey appends to buf the indexes 0..n-1 as a map from key(i) would
// keep them: one per key, the last, in key order.
func lastByKey(buf []int, n int, key func(int) string) []int {
	for i := range n {
		buf = append(buf, i)
	}
	slices.SortStableFunc(buf, func(x, y int) int { return strings.Compare(key(x), key(y)) })
	out := buf[:0]
	for k, i := range buf {
		if k+1 < len(buf) && key(buf[k+1]) == key(i) {
			continue
		}
		out = append(out, i)
	}
	return out
}

// appendMappings appends group suffix -> provider uuids, suffixes in
// order, as encoding/json writes a map[string][]string.
func appendMappings(b []byte, m map[string][]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	b = append(b, '{')
	for k, suffix := range slices.Sorted(maps.Keys(m)) {
		if k > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, suffix)
		b = append(b, ':')
		if m[suffix] == nil {
			b = append(b, "null"...)
			continue
		}
		b = append(b, '[')
		for i, u := range m[suffix] {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, u)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// appendJSONFloat appends a finite f as encoding/json writes a float64.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendJSONString appends s as encoding/json writes a string without
// HTML escaping: invalid UTF-8 becomes U+FFFD, and U+2028 and U+2029 are
// escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
