package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

func usageCommand() *command {
	return &command{
		name:    "usage",
		args:    "[--project P ...] [--user U] [--consumer-type T]",
		summary: "Resource usage per project (and user), or the whole cloud's",
		help: `With --project (repeatable), asks GET /usages for each project (and --user):
one row per project and consumer type, with the consumer count and one
column per resource class.

Placement has no list of projects, so without --project berth shows the
cloud's totals instead: usage and capacity per class summed over every
provider (one request per provider, as berth providers).`,
		example: `berth usage --project 6f70656e-7374-6163-6b00-000000000001
berth usage --project demo --project admin --user alice
berth usage`,
		setup: func(fs *flag.FlagSet) func(*env, []string) error {
			var projects multiFlag
			fs.Var(&projects, "project", "`PROJECT` id (repeatable)")
			user := fs.String("user", "", "only consumers of `USER` (with --project)")
			ctype := fs.String("consumer-type", "", "only consumers of `TYPE`, e.g. INSTANCE, or all, unknown (with --project)")
			width := fs.Int("width", 20, "`N` cells per usage bar (cloud totals)")
			return func(e *env, args []string) error {
				if err := argsN(args); err != nil {
					return err
				}
				if len(projects) == 0 {
					if *user != "" || *ctype != "" {
						return usagef("--user and --consumer-type need --project (Placement has no list of projects)")
					}
					return cloudUsage(e, *width)
				}
				return projectUsage(e, projects, *user, *ctype)
			}
		},
	}
}

func projectUsage(e *env, projects []string, user, ctype string) error {
	type answer struct {
		Project string                     `json:"project_id"`
		User    string                     `json:"user_id,omitempty"`
		Usages  map[string]json.RawMessage `json:"usages"`
	}
	var all []answer
	for _, p := range projects {
		q := url.Values{"project_id": {p}}
		if user != "" {
			q.Set("user_id", user)
		}
		if ctype != "" {
			q.Set("consumer_type", ctype)
		}
		var a answer
		if _, err := e.client.JSON(e.ctx, "GET", "/usages?"+q.Encode(), nil, &a); err != nil {
			return err
		}
		a.Project, a.User = p, user
		all = append(all, a)
	}
	if e.json() {
		if len(all) == 1 {
			return e.printValue(map[string]any{"usages": all[0].Usages})
		}
		return e.printValue(map[string]any{"projects": all})
	}
	// From microversion 1.38 usages are grouped by consumer type:
	// {"INSTANCE": {"consumer_count": 2, "VCPU": 4}, ...}; before, flat.
	type row struct {
		project, ctype string
		count          string
		amounts        map[string]int64
	}
	var rows []row
	classes := map[string]bool{}
	for _, a := range all {
		var group []row
		flat := map[string]int64{}
		grouped := false
		for k, v := range a.Usages {
			var n int64
			if json.Unmarshal(v, &n) == nil {
				flat[k] = n
				continue
			}
			var g map[string]int64
			if err := json.Unmarshal(v, &g); err != nil {
				return fmt.Errorf("GET /usages: unexpected value for %s: %s", k, v)
			}
			grouped = true
			r := row{project: a.Project, ctype: k, count: "-", amounts: map[string]int64{}}
			for c, n := range g {
				if c == "consumer_count" {
					r.count = strconv.FormatInt(n, 10)
					continue
				}
				r.amounts[c] = n
				classes[c] = true
			}
			group = append(group, r)
		}
		sort.Slice(group, func(i, j int) bool { return typeOrder(group[i].ctype) < typeOrder(group[j].ctype) })
		rows = append(rows, group...)
		if !grouped && len(flat) > 0 {
			for c := range flat {
				classes[c] = true
			}
			rows = append(rows, row{project: a.Project, ctype: "-", count: "-", amounts: flat})
		}
	}
	cols := sortedKeys(classes)
	header := []string{"PROJECT"}
	if user != "" {
		header = append(header, "USER")
	}
	header = append(header, "CONSUMER TYPE", "CONSUMERS")
	header = append(header, cols...)
	t := NewTable(header...)
	right := []int{}
	for i := len(header) - len(cols) - 1; i < len(header); i++ {
		right = append(right, i)
	}
	t.AlignRight(right...)
	for _, r := range rows {
		cells := []string{r.project}
		if user != "" {
			cells = append(cells, user)
		}
		cells = append(cells, r.ctype, r.count)
		for _, c := range cols {
			cells = append(cells, strconv.FormatInt(r.amounts[c], 10))
		}
		t.Row(cells...)
	}
	if t.Len() == 0 {
		fmt.Fprintf(e.io.Stdout, "No usage for project %s.\n", strings.Join(projects, ", "))
		return errNothing
	}
	return t.Render(e.io.Stdout)
}

// typeOrder puts "all" first, then the types by name.
func typeOrder(t string) string {
	if t == "all" {
		return ""
	}
	return t
}

func cloudUsage(e *env, width int) error {
	ps, err := fetchProviders(e, nil)
	if err != nil {
		return err
	}
	used, capacity := providersTotals(ps)
	if e.json() {
		return e.printValue(map[string]any{"providers": len(ps), "usages": used, "capacity": capacity})
	}
	t := NewTable("CLASS", "USAGE", "", "USED/CAPACITY").AlignRight(2, 3)
	for _, c := range sortedKeys(capacity) {
		bar, pct, ratio := UsageBar(used[c], capacity[c], width)
		t.Row(c, bar, pct, ratio)
	}
	if t.Len() == 0 {
		fmt.Fprintf(e.io.Stdout, "No inventory on %s.\n", countProviders(len(ps)))
		return nil
	}
	if err := t.Render(e.io.Stdout); err != nil {
		return err
	}
	fmt.Fprintf(e.io.Stdout, "\nOver %s. Give --project for usage per project (Placement has no list of projects).\n", countProviders(len(ps)))
	return nil
}

// countProviders is "1 provider" or "N providers".
func countProviders(n int) string {
	if n == 1 {
		return "1 provider"
	}
	return fmt.Sprintf("%d providers", n)
}
