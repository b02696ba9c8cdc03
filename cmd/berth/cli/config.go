package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/berthd/berth/claims/catalog"
)

func configCommands() []*command {
	return []*command{
		{
			name:    "config get",
			args:    "[KEY]",
			summary: "Show server-wide settings, or one setting's value",
			example: "berth config get\nberth config get instances.placement.scriptlet > default.star",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				return func(e *env, args []string) error {
					if len(args) > 1 {
						return usagef("unexpected arguments %q", args[1:])
					}
					if len(args) == 1 && !slices.Contains(catalog.ConfigKeys(), args[0]) {
						return usagef("unknown key %q; the keys are %s", args[0], strings.Join(catalog.ConfigKeys(), ", "))
					}
					var doc map[string]any
					raw, err := e.client.JSON(e.ctx, "GET", "/config", nil, &doc)
					if err != nil {
						return err
					}
					if len(args) == 1 {
						v, ok := doc[args[0]]
						if !ok {
							fmt.Fprintf(e.io.Stderr, "%s is not set.\n", args[0])
							return errNothing
						}
						if e.json() {
							return e.printValue(v)
						}
						s := scalar(v)
						fmt.Fprint(e.io.Stdout, s)
						if !strings.HasSuffix(s, "\n") {
							fmt.Fprintln(e.io.Stdout)
						}
						return nil
					}
					if e.json() {
						return e.printJSON(raw)
					}
					if len(doc) == 0 {
						fmt.Fprintln(e.io.Stdout, "Nothing set.")
						return errNothing
					}
					t := NewTable("KEY", "VALUE")
					for _, k := range sortedKeys(doc) {
						s := scalar(doc[k])
						if lines := strings.Split(strings.TrimRight(s, "\n"), "\n"); len(lines) > 1 {
							s = fmt.Sprintf("%s … (%d lines; berth config get %s)", lines[0], len(lines), k)
						}
						t.Row(k, s)
					}
					return t.Render(e.io.Stdout)
				}
			},
		},
		{
			name:    "config set",
			args:    "KEY VALUE|@FILE|-",
			summary: "Set a server-wide setting (PATCH /config)",
			help: `VALUE is sent as JSON when it parses as JSON (a number, true, an object),
else as a string; --string always sends a string. @FILE or - sends the
contents of a file or of standard input as a string (a scriptlet's source).`,
			example: "berth config set instances.placement.scriptlet @default.star",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				asString := fs.Bool("string", false, "send VALUE as a string even if it parses as JSON")
				return func(e *env, args []string) error {
					if err := argsN(args, "KEY", "VALUE"); err != nil {
						return err
					}
					var v any = args[1]
					switch {
					case args[1] == "-" || strings.HasPrefix(args[1], "@"):
						src, err := readSource(e, strings.TrimPrefix(args[1], "@"))
						if err != nil {
							return err
						}
						v = string(src)
					case !*asString:
						var j any
						if json.Unmarshal([]byte(args[1]), &j) == nil && j != nil {
							v = j
						}
					}
					return patchConfig(e, map[string]any{args[0]: v}, "set")
				}
			},
		},
		{
			name:    "config unset",
			args:    "KEY",
			summary: "Remove a server-wide setting (its default applies again)",
			example: "berth config unset instances.placement.scriptlet",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				return func(e *env, args []string) error {
					if err := argsN(args, "KEY"); err != nil {
						return err
					}
					return patchConfig(e, map[string]any{args[0]: nil}, "unset")
				}
			},
		},
	}
}

func patchConfig(e *env, body map[string]any, what string) error {
	raw, err := e.client.JSON(e.ctx, "PATCH", "/config", body, nil)
	if err != nil {
		return err
	}
	if e.json() {
		if len(raw) > 0 {
			return e.printJSON(raw)
		}
		return nil
	}
	for k := range body {
		fmt.Fprintf(e.io.Stdout, "%s %s.\n", k, what)
	}
	return nil
}
