package cli

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// ParseResources reads "VCPU:4,MEMORY_MB:16384" (or CLASS=N) into a map
// of positive amounts.
func ParseResources(s string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		class, amount, ok := strings.Cut(part, ":")
		if !ok {
			class, amount, ok = strings.Cut(part, "=")
		}
		if !ok || class == "" {
			return nil, fmt.Errorf("resources: %q is not CLASS:AMOUNT", part)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(amount), 10, 64)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("resources: amount of %s must be a positive integer, not %q", class, amount)
		}
		if _, dup := out[class]; dup {
			return nil, fmt.Errorf("resources: %s given twice", class)
		}
		out[strings.ToUpper(strings.TrimSpace(class))] = n
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("resources: give at least one CLASS:AMOUNT, e.g. VCPU:4,MEMORY_MB:16384")
	}
	return out, nil
}

// FormatResources is the inverse of ParseResources, classes sorted.
func FormatResources(m map[string]int64) string {
	keys := sortedKeys(m)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s:%d", k, m[k])
	}
	return strings.Join(parts, ",")
}

// parseProperty reads KEY=VALUE; a VALUE that is valid JSON (a number,
// true, an object...) is sent as that, anything else as a string.
func parseProperty(s string) (string, any, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return "", nil, fmt.Errorf("property %q is not KEY=VALUE", s)
	}
	var j any
	if err := json.Unmarshal([]byte(v), &j); err == nil {
		return k, j, nil
	}
	return k, v, nil
}

// parseKey reads a placement key NAME=VALUE[:WEIGHT].
func parseKey(s string, system bool) (map[string]any, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return nil, fmt.Errorf("key %q is not NAME=VALUE[:WEIGHT]", s)
	}
	val, weight, hasWeight := strings.Cut(rest, ":")
	v, err := strconv.ParseFloat(val, 64)
	if err != nil {
		return nil, fmt.Errorf("key %s: value %q is not a number", name, val)
	}
	k := map[string]any{"name": name, "value": v}
	if hasWeight {
		w, err := strconv.ParseFloat(weight, 64)
		if err != nil {
			return nil, fmt.Errorf("key %s: weight %q is not a number", name, weight)
		}
		k["weight"] = w
	}
	if system {
		k["system"] = true
	}
	return k, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
