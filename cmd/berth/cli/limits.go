package cli

import (
	"flag"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Quotas (docs/quotas.md): the projects' limits, shown with their usage,
// set, and deleted; and the registered limits, every project's defaults.

func limitsCommands() []*command {
	return []*command{
		{
			name:    "limits show",
			args:    "[PROJECT]",
			summary: "A project's limits, usage and what remains; without PROJECT, every project's own limits and the defaults",
			help: `Exit status 1 when nothing is found: a project with no limits (its own or
the defaults) that holds nothing; without PROJECT, no limits at all.`,
			example: "berth limits show demo\nberth limits show",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				return func(e *env, args []string) error {
					switch len(args) {
					case 0:
						return showAllLimits(e)
					case 1:
						return showLimits(e, args[0])
					}
					return usagef("unexpected arguments %q", args[1:])
				}
			},
		},
		{
			name:    "limits set",
			args:    "PROJECT RESOURCE=LIMIT...",
			summary: "Replace a project's own limits (PUT /limits/{project_id})",
			help: `RESOURCE is a resource class (VCPU, MEMORY_MB, DISK_GB, CUSTOM_...) or
consumers (how many consumers the project may hold). The limits given
replace all the project's own; resources it has none of its own for take
the defaults (berth limits defaults).`,
			example: "berth limits set demo VCPU=40 MEMORY_MB=102400 consumers=10",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				return func(e *env, args []string) error {
					if len(args) < 2 {
						return usagef("want PROJECT and at least one RESOURCE=LIMIT")
					}
					limits, err := parseLimits(args[1:])
					if err != nil {
						return err
					}
					if _, err := e.client.JSON(e.ctx, "PUT", "/limits/"+url.PathEscape(args[0]), map[string]any{"limits": limits}, nil); err != nil {
						return err
					}
					return showLimits(e, args[0])
				}
			},
		},
		{
			name:    "limits delete",
			args:    "PROJECT",
			summary: "Remove a project's own limits (the defaults apply to it again)",
			example: "berth limits delete demo",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				return func(e *env, args []string) error {
					if err := argsN(args, "PROJECT"); err != nil {
						return err
					}
					if _, err := e.client.JSON(e.ctx, "DELETE", "/limits/"+url.PathEscape(args[0]), nil, nil); err != nil {
						return err
					}
					if !e.json() {
						fmt.Fprintf(e.io.Stdout, "Limits of project %s deleted.\n", args[0])
					}
					return nil
				}
			},
		},
		{
			name:    "limits defaults",
			args:    "[RESOURCE=LIMIT...] [--clear]",
			summary: "Show, or replace, the registered limits: every project's defaults",
			example: "berth limits defaults VCPU=20 consumers=10\nberth limits defaults",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				clear := fs.Bool("clear", false, "remove every default")
				return func(e *env, args []string) error {
					if len(args) > 0 || *clear {
						if len(args) > 0 && *clear {
							return usagef("give RESOURCE=LIMIT or --clear, not both")
						}
						limits, err := parseLimits(args)
						if err != nil {
							return err
						}
						if _, err := e.client.JSON(e.ctx, "PUT", "/registered_limits", map[string]any{"limits": limits}, nil); err != nil {
							return err
						}
					}
					var body struct {
						Limits map[string]int64 `json:"limits"`
					}
					raw, err := e.client.JSON(e.ctx, "GET", "/registered_limits", nil, &body)
					if err != nil || e.json() {
						if err == nil {
							err = e.printJSON(raw)
						}
						return err
					}
					return limitsTable(e, body.Limits)
				}
			},
		},
	}
}

// parseLimits reads RESOURCE=LIMIT arguments.
func parseLimits(args []string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, a := range args {
		r, v, ok := strings.Cut(a, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || r == "" || err != nil || n < 0 {
			return nil, usagef("%q: want RESOURCE=LIMIT, a whole number from 0", a)
		}
		if _, dup := out[r]; dup {
			return nil, usagef("%s given twice", r)
		}
		out[r] = n
	}
	return out, nil
}

// limitsTable prints resource -> limit.
func limitsTable(e *env, limits map[string]int64) error {
	if len(limits) == 0 {
		fmt.Fprintln(e.io.Stdout, "No limits.")
		return nil
	}
	t := NewTable("RESOURCE", "LIMIT").AlignRight(1)
	for _, r := range sortedKeys(limits) {
		t.Row(r, limitText(limits[r]))
	}
	return t.Render(e.io.Stdout)
}

// limitText is a limit as shown: -1 (Keystone's) is unlimited.
func limitText(n int64) string {
	if n < 0 {
		return "unlimited"
	}
	return strconv.FormatInt(n, 10)
}

// showLimits prints GET /limits/{project}: per resource its limit, the
// usage and what remains, like `openstack limits show --absolute`; exit
// status 1 when there is none of them.
func showLimits(e *env, project string) error {
	var body struct {
		Resources map[string]struct {
			Limit     *int64 `json:"limit"`
			Used      int64  `json:"used"`
			Remaining *int64 `json:"remaining"`
			Default   bool   `json:"default"`
		} `json:"resources"`
	}
	raw, err := e.client.JSON(e.ctx, "GET", "/limits/"+url.PathEscape(project), nil, &body)
	if err != nil {
		return err
	}
	if e.json() {
		return found(len(body.Resources) > 0, e.printJSON(raw))
	}
	if len(body.Resources) == 0 {
		fmt.Fprintf(e.io.Stdout, "Project %s has no limits and holds nothing.\n", project)
		return errNothing
	}
	t := NewTable("RESOURCE", "LIMIT", "USED", "REMAINING", "FROM").AlignRight(1, 2, 3)
	names := make([]string, 0, len(body.Resources))
	for r := range body.Resources {
		names = append(names, r)
	}
	sort.Strings(names)
	for _, r := range names {
		v := body.Resources[r]
		limit, left, from := "-", "-", ""
		if v.Limit != nil {
			limit, left, from = limitText(*v.Limit), limitText(*v.Remaining), "project"
			if v.Default {
				from = "default"
			}
		}
		t.Row(r, limit, strconv.FormatInt(v.Used, 10), left, from)
	}
	return t.Render(e.io.Stdout)
}

// showAllLimits prints every project's own limits, then the defaults;
// exit status 1 when there are none.
func showAllLimits(e *env) error {
	var all struct {
		Projects map[string]map[string]int64 `json:"projects"`
	}
	raw, err := e.client.JSON(e.ctx, "GET", "/limits", nil, &all)
	if err != nil {
		return err
	}
	var reg struct {
		Limits map[string]int64 `json:"limits"`
	}
	regRaw, err := e.client.JSON(e.ctx, "GET", "/registered_limits", nil, &reg)
	if err != nil {
		return err
	}
	if e.json() {
		return found(len(all.Projects) > 0 || len(reg.Limits) > 0, e.printJSON([]byte(fmt.Sprintf(`{"projects": %s, "registered_limits": %s}`,
			strings.TrimSpace(string(raw)), strings.TrimSpace(string(regRaw))))))
	}
	t := NewTable("PROJECT", "RESOURCE", "LIMIT").AlignRight(2)
	for _, p := range sortedKeys(all.Projects) {
		for _, r := range sortedKeys(all.Projects[p]) {
			t.Row(p, r, limitText(all.Projects[p][r]))
		}
	}
	for _, r := range sortedKeys(reg.Limits) {
		t.Row("(default)", r, limitText(reg.Limits[r]))
	}
	if t.Len() == 0 {
		fmt.Fprintln(e.io.Stdout, "No limits.")
		return errNothing
	}
	return t.Render(e.io.Stdout)
}
