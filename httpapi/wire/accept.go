package wire

import (
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// acceptRange is one media range of an Accept header: type and subtype in
// lower case, its media type parameters (names in lower case) and its
// weight.
type acceptRange struct {
	typ, sub string
	params   string
	q        float64
}

// parseAccept parses an Accept header as webob does. ok is false for a
// header webob finds invalid, which it then treats as accepting anything.
func parseAccept(h string) (ranges []acceptRange, ok bool) {
	for _, elem := range strings.Split(h, ",") {
		elem = strings.Trim(elem, " \t")
		if elem == "" {
			continue
		}
		parts := strings.Split(elem, ";")
		mt := strings.TrimRight(parts[0], " \t")
		typ, sub, found := strings.Cut(mt, "/")
		if !found || !isToken(typ) || !isToken(sub) {
			return nil, false
		}
		r := acceptRange{typ: strings.ToLower(typ), sub: strings.ToLower(sub), q: 1}
		var params []string
		weighted := false
		for _, p := range parts[1:] {
			p = strings.Trim(p, " \t")
			name, value, hasValue := strings.Cut(p, "=")
			if !isToken(name) || (hasValue && !isToken(value) && !isQuoted(value)) {
				return nil, false
			}
			switch {
			case weighted:
				// Extension parameters follow the weight; they do not count.
			case name == "q" || name == "Q":
				q, valid := parseQValue(value)
				if !hasValue || !valid {
					return nil, false
				}
				r.q, weighted = q, true
			case !hasValue:
				return nil, false
			default:
				params = append(params, strings.ToLower(name)+"="+value)
			}
		}
		r.params = strings.Join(params, ";")
		ranges = append(ranges, r)
	}
	return ranges, true
}

// parseQValue parses a weight: 0, 0.x to three decimals, or 1 (1.000).
func parseQValue(v string) (float64, bool) {
	whole, frac, _ := strings.Cut(v, ".")
	if len(frac) > 3 || (whole != "0" && whole != "1") || (whole == "1" && strings.Trim(frac, "0") != "") {
		return 0, false
	}
	for _, r := range frac {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	q, err := strconv.ParseFloat(v, 64)
	return q, err == nil
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 126 || r <= 32 || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r) {
			return false
		}
	}
	return true
}

func isQuoted(s string) bool { return len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' }

// AcceptableOffers is webob's acceptable_offers: the offers (bare media
// types) an Accept header admits, most preferred first, offers of equal
// weight in the order given. Each offer takes the weight of the most
// specific range that matches it (a range with parameters matches no bare
// offer); weight 0 excludes. An invalid header admits every offer.
func AcceptableOffers(h string, offers ...string) []string {
	ranges, ok := parseAccept(h)
	if !ok {
		return offers
	}
	type scored struct {
		offer       string
		q           float64
		specificity int
	}
	var out []scored
	for _, offer := range offers {
		typ, sub, _ := strings.Cut(offer, "/")
		best := scored{offer: offer}
		for _, r := range ranges {
			spec := 0
			switch {
			case r.typ == typ && r.sub == sub && r.params == "":
				spec = 3
			case r.typ == typ && r.sub == "*":
				spec = 2
			case r.typ == "*" && r.sub == "*":
				spec = 1
			}
			if spec > best.specificity {
				best.q, best.specificity = r.q, spec
			}
		}
		if best.specificity > 0 && best.q > 0 {
			out = append(out, best)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].q > out[j].q })
	names := make([]string, len(out))
	for i, o := range out {
		names[i] = o.offer
	}
	return names
}

// AcceptHeader is the request's Accept header as Placement sees it:
// repeated headers joined, and none or "*/*" taken as application/json
// (its request log middleware does that, so that errors are JSON).
func AcceptHeader(r *http.Request) string {
	a := strings.Join(r.Header.Values(echo.HeaderAccept), ", ")
	if a == "" || a == "*/*" {
		return echo.MIMEApplicationJSON
	}
	return a
}
