package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
)

// readSource reads a file, or standard input for "-".
func readSource(e *env, path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(e.io.Stdin)
	}
	return os.ReadFile(path)
}

func scriptletCommands() []*command {
	return []*command{
		{
			name:    "scriptlet list",
			args:    "",
			summary: "List stored scriptlets",
			example: "berth scriptlet list",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				return func(e *env, args []string) error {
					if err := argsN(args); err != nil {
						return err
					}
					var doc map[string]json.RawMessage
					raw, err := e.client.JSON(e.ctx, "GET", "/scriptlets", nil, &doc)
					if err != nil {
						return err
					}
					var names []json.RawMessage
					_ = json.Unmarshal(doc["scriptlets"], &names)
					if e.json() {
						return found(len(names) > 0, e.printJSON(raw))
					}
					return found(len(names) > 0, renderNamedList(e.io.Stdout, doc["scriptlets"], "No scriptlets."))
				}
			},
		},
		{
			name:    "scriptlet set",
			args:    "NAME FILE|-",
			summary: "Store a Starlark scriptlet under NAME (compiled by the server; errors give line and column)",
			help: `The source is a file, or standard input with "-". A scriptlet defines
instance_placement(request, candidate_members), or filter(request, candidate)
and weigh(request, candidate) to be used as policy units.`,
			example: `printf 'def instance_placement(request, candidate_members):\n    if request.name == "foo":\n        return "Invalid name"\n' > refuse-foo.star
berth scriptlet set refuse-foo refuse-foo.star`,
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				return func(e *env, args []string) error {
					if err := argsN(args, "NAME", "FILE"); err != nil {
						return err
					}
					src, err := readSource(e, args[1])
					if err != nil {
						return err
					}
					raw, err := e.client.Do(e.ctx, "PUT", "/scriptlets/"+url.PathEscape(args[0]), src, "text/plain")
					if err != nil {
						return err
					}
					if e.json() && len(raw) > 0 {
						return e.printJSON(raw)
					}
					if !e.json() {
						fmt.Fprintf(e.io.Stdout, "Scriptlet %s stored (%d bytes).\n", args[0], len(src))
					}
					return nil
				}
			},
		},
		{
			name:    "scriptlet show",
			args:    "NAME",
			summary: "Print a scriptlet's source",
			example: "berth scriptlet show refuse-foo",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				return func(e *env, args []string) error {
					if err := argsN(args, "NAME"); err != nil {
						return err
					}
					raw, err := e.client.Do(e.ctx, "GET", "/scriptlets/"+url.PathEscape(args[0]), nil, "")
					if err != nil {
						return err
					}
					if e.json() {
						return e.printValue(map[string]string{"name": args[0], "source": string(raw)})
					}
					_, err = e.io.Stdout.Write(raw)
					if err == nil && len(raw) > 0 && raw[len(raw)-1] != '\n' {
						fmt.Fprintln(e.io.Stdout)
					}
					return err
				}
			},
		},
		{
			name:    "scriptlet delete",
			args:    "NAME",
			summary: "Delete a stored scriptlet",
			example: "berth scriptlet delete refuse-foo",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				return func(e *env, args []string) error {
					if err := argsN(args, "NAME"); err != nil {
						return err
					}
					if _, err := e.client.Do(e.ctx, "DELETE", "/scriptlets/"+url.PathEscape(args[0]), nil, ""); err != nil {
						return err
					}
					if !e.json() {
						fmt.Fprintf(e.io.Stdout, "Scriptlet %s deleted.\n", args[0])
					}
					return nil
				}
			},
		},
		{
			name:    "scriptlet test",
			args:    "NAME [--resources CLASS:N,...] [selection flags]",
			summary: "Run a scriptlet against live data for a sample claim, without claiming",
			help: `POSTs /scriptlets/NAME/test with the claim body the flags describe (as
berth explain; --resources defaults to VCPU:1) and prints the scriptlet's
decision, the ranking it saw and its log. A refusal is a result: exit 0.`,
			example: `berth scriptlet test refuse-foo --resources VCPU:1 --name foo`,
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				var c claimFlags
				c.register(fs, true)
				return func(e *env, args []string) error {
					if err := argsN(args, "NAME"); err != nil {
						return err
					}
					if c.resources == "" {
						c.resources = "VCPU:1"
					}
					b, err := c.body(false, false)
					if err != nil {
						return err
					}
					var ans scriptletTest
					raw, err := e.client.JSON(e.ctx, "POST", "/scriptlets/"+url.PathEscape(args[0])+"/test", b, &ans)
					if err != nil {
						return err
					}
					if e.json() {
						return e.printJSON(raw)
					}
					renderScriptletTest(e.io.Stdout, &ans)
					return nil
				}
			},
		},
	}
}

// scriptletTest is the answer of POST /scriptlets/{name}/test.
type scriptletTest struct {
	Decision struct {
		Target  *string `json:"target"`
		Refused *string `json:"refused"`
	} `json:"decision"`
	Ranking []rank    `json:"ranking"`
	Log     []logLine `json:"log"`
}

func renderScriptletTest(w io.Writer, ans *scriptletTest) {
	switch {
	case ans.Decision.Refused != nil:
		fmt.Fprintf(w, "Refused: %s\n", *ans.Decision.Refused)
	case ans.Decision.Target != nil && *ans.Decision.Target != "":
		target := *ans.Decision.Target
		for _, r := range ans.Ranking {
			if r.RootUUID == target && r.RootName != "" {
				target = r.RootName + " (" + target + ")"
			}
		}
		fmt.Fprintf(w, "Would place on: %s\n", target)
	default:
		fmt.Fprintln(w, "No target set: the ranked order stands.")
	}
	if len(ans.Ranking) > 0 {
		fmt.Fprintln(w, "\nRanking:")
		renderRanking(w, ans.Ranking, 10)
	}
	fmt.Fprintln(w, "\nLog:")
	if len(ans.Log) == 0 {
		fmt.Fprintln(w, "  (nothing logged)")
	}
	for _, l := range ans.Log {
		fmt.Fprintf(w, "  %-5s %s\n", l.Level, l.Message)
	}
}

// renderNamedList prints a list that is either names or objects with a
// "name" (their other scalar fields become columns).
func renderNamedList(w io.Writer, raw json.RawMessage, empty string) error {
	var names []string
	if json.Unmarshal(raw, &names) == nil {
		if len(names) == 0 {
			fmt.Fprintln(w, empty)
			return nil
		}
		t := NewTable("NAME")
		for _, n := range names {
			t.Row(n)
		}
		return t.Render(w)
	}
	var objs []map[string]any
	if err := json.Unmarshal(raw, &objs); err != nil {
		return fmt.Errorf("unexpected list: %s", strings.TrimSpace(string(raw)))
	}
	if len(objs) == 0 {
		fmt.Fprintln(w, empty)
		return nil
	}
	cols := map[string]bool{}
	for _, o := range objs {
		for k, v := range o {
			switch v.(type) {
			case map[string]any, []any:
			default:
				if k != "name" && k != "source" {
					cols[k] = true
				}
			}
		}
	}
	keys := sortedKeys(cols)
	header := []string{"NAME"}
	for _, k := range keys {
		header = append(header, strings.ToUpper(k))
	}
	t := NewTable(header...)
	for _, o := range objs {
		cells := []string{scalar(o["name"])}
		for _, k := range keys {
			cells = append(cells, scalar(o[k]))
		}
		t.Row(cells...)
	}
	return t.Render(w)
}

// scalar prints a JSON scalar for a table cell.
func scalar(v any) string {
	switch v := v.(type) {
	case nil:
		return "-"
	case string:
		return v
	case float64:
		return num(v)
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}
