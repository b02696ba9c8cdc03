package cli

import (
	"flag"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// providerExtraCommands are the per-provider views beyond Placement's:
// reported state and placement keys.
func providerExtraCommands() []*command {
	return []*command{
		{
			name:    "providers state",
			args:    "UUID",
			summary: "Show the state a provider's agent last reported (load, free memory, CPU use)",
			example: "berth providers state 0c0a1b2c-0000-4000-8000-000000000001",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				return func(e *env, args []string) error {
					if err := argsN(args, "UUID"); err != nil {
						return err
					}
					var doc map[string]any
					raw, err := e.client.JSON(e.ctx, "GET", "/resource_providers/"+url.PathEscape(args[0])+"/state", nil, &doc)
					if err != nil {
						return err
					}
					if e.json() {
						return e.printJSON(raw)
					}
					t := NewTable("FIELD", "VALUE")
					for _, k := range sortedKeys(doc) {
						t.Row(k, scalar(doc[k]))
					}
					return t.Render(e.io.Stdout)
				}
			},
		},
		{
			name:    "providers keys",
			args:    "UUID [--set NAME=VALUE[:sticky] ... | --clear]",
			summary: "Show or replace a provider's affinity placement keys",
			help: `Without --set or --clear, shows the keys. --set (repeatable) replaces the
whole list with the keys given (PUT); ":sticky" marks a key that is copied to
consumers placed on the provider. Names starting with "_" are reserved keys,
which only an admin may set.`,
			example: "berth providers keys 0c0a1b2c-0000-4000-8000-000000000001 --set rack=0.3 --set _tier=1:sticky",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				var set multiFlag
				fs.Var(&set, "set", "key `NAME=VALUE[:sticky]` (repeatable; replaces every key)")
				clear := fs.Bool("clear", false, "remove every key")
				return func(e *env, args []string) error {
					if err := argsN(args, "UUID"); err != nil {
						return err
					}
					path := "/resource_providers/" + url.PathEscape(args[0]) + "/placement_keys"
					type key struct {
						Name   string  `json:"name"`
						Value  float64 `json:"value"`
						Sticky bool    `json:"sticky"`
					}
					var doc struct {
						Keys []key `json:"placement_keys"`
					}
					var body any
					switch {
					case *clear && len(set) > 0:
						return usagef("--set and --clear exclude each other")
					case *clear:
						body = map[string]any{"placement_keys": []key{}}
					case len(set) > 0:
						keys := []key{}
						for _, s := range set {
							k, err := parsePlacementKey(s)
							if err != nil {
								return usagef("%v", err)
							}
							keys = append(keys, key{k.name, k.value, k.sticky})
						}
						body = map[string]any{"placement_keys": keys}
					}
					method := "GET"
					if body != nil {
						method = "PUT"
					}
					raw, err := e.client.JSON(e.ctx, method, path, body, &doc)
					if err != nil {
						return err
					}
					// A lookup that finds no keys exits 1; a write does not.
					lookup := body == nil
					if e.json() {
						return found(len(doc.Keys) > 0 || !lookup, e.printJSON(raw))
					}
					if len(doc.Keys) == 0 {
						fmt.Fprintln(e.io.Stdout, "No placement keys.")
						return found(!lookup, nil)
					}
					t := NewTable("NAME", "VALUE", "STICKY").AlignRight(1)
					for _, k := range doc.Keys {
						t.Row(k.Name, num(k.Value), yesNo(k.Sticky))
					}
					return t.Render(e.io.Stdout)
				}
			},
		},
	}
}

type placementKey struct {
	name   string
	value  float64
	sticky bool
}

// parsePlacementKey reads NAME=VALUE[:sticky].
func parsePlacementKey(s string) (placementKey, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return placementKey{}, fmt.Errorf("key %q is not NAME=VALUE[:sticky]", s)
	}
	val, flag, hasFlag := strings.Cut(rest, ":")
	if hasFlag && flag != "sticky" {
		return placementKey{}, fmt.Errorf("key %s: %q after the value, want :sticky", name, flag)
	}
	v, err := strconv.ParseFloat(val, 64)
	if err != nil {
		return placementKey{}, fmt.Errorf("key %s: value %q is not a number", name, val)
	}
	return placementKey{name, v, hasFlag}, nil
}
