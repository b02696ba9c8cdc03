package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
)

// policy is a scheduling policy as /scheduling_policies serves it.
type policy struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Default     bool   `json:"default"`
	Filters     []struct {
		Name   string         `json:"name"`
		Params map[string]any `json:"params"`
	} `json:"filters"`
	Weighers []struct {
		Name   string         `json:"name"`
		Factor *float64       `json:"factor"`
		Params map[string]any `json:"params"`
	} `json:"weighers"`
	Balancer *struct {
		Mode string   `json:"mode"`
		High *float64 `json:"high"`
		Low  *float64 `json:"low"`
	} `json:"balancer"`
	Scriptlet *string `json:"scriptlet"`
}

// policyUnit is one entry of GET /policy_units.
type policyUnit struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Description string `json:"description"`
	Parameters  []struct {
		Name        string `json:"name"`
		Type        string `json:"type"`
		Default     any    `json:"default"`
		Description string `json:"description"`
		Required    bool   `json:"required"`
	} `json:"parameters"`
}

const policyExample = `{
  "name": "spread",
  "description": "spread by free RAM, avoid hosts with stale state",
  "filters": [{"name": "state_freshness", "params": {"max_age_s": 120}}],
  "weighers": [{"name": "free_ram", "factor": 2}, {"name": "even_consumers", "factor": 1}],
  "balancer": null,
  "scriptlet": null
}`

// readJSONFile reads a file (or "-") and checks it is a JSON object.
func readJSONFile(e *env, path string) (map[string]any, error) {
	src, err := readSource(e, path)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %v", path, err)
	}
	return doc, nil
}

func policyCommands() []*command {
	return []*command{
		{
			name:    "policy list",
			summary: "List scheduling policies",
			example: "berth policy list",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				return func(e *env, args []string) error {
					if err := argsN(args); err != nil {
						return err
					}
					var doc struct {
						Policies []policy `json:"scheduling_policies"`
					}
					raw, err := e.client.JSON(e.ctx, "GET", "/scheduling_policies", nil, &doc)
					if err != nil {
						return err
					}
					if e.json() {
						return found(len(doc.Policies) > 0, e.printJSON(raw))
					}
					if len(doc.Policies) == 0 {
						fmt.Fprintln(e.io.Stdout, "No scheduling policies.")
						return errNothing
					}
					t := NewTable("NAME", "DEFAULT", "FILTERS", "WEIGHERS", "BALANCER", "SCRIPTLET", "DESCRIPTION")
					for _, p := range doc.Policies {
						var fs, ws []string
						for _, f := range p.Filters {
							fs = append(fs, f.Name)
						}
						for _, w := range p.Weighers {
							ws = append(ws, fmt.Sprintf("%s×%s", w.Name, factor(w.Factor)))
						}
						bal := "-"
						if p.Balancer != nil {
							bal = p.Balancer.Mode
						}
						t.Row(p.Name, yesNo(p.Default), list(fs), list(ws), bal, strPtr(p.Scriptlet), p.Description)
					}
					return t.Render(e.io.Stdout)
				}
			},
		},
		{
			name:    "policy show",
			args:    "NAME",
			summary: "Show one scheduling policy",
			example: "berth policy show spread",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				return func(e *env, args []string) error {
					if err := argsN(args, "NAME"); err != nil {
						return err
					}
					var p policy
					raw, err := e.client.JSON(e.ctx, "GET", "/scheduling_policies/"+url.PathEscape(args[0]), nil, &p)
					if err != nil {
						return err
					}
					if e.json() {
						return e.printJSON(raw)
					}
					renderPolicy(e.io.Stdout, &p)
					return nil
				}
			},
		},
		{
			name:    "policy create",
			args:    "FILE|-",
			summary: "Create a scheduling policy from a JSON file",
			help:    "The file is the policy as JSON, for example:\n" + policyExample + "\n\nberth policy units lists the filters and weighers and their parameters.",
			example: "berth policy create spread.json",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				return func(e *env, args []string) error {
					if err := argsN(args, "FILE"); err != nil {
						return err
					}
					doc, err := readJSONFile(e, args[0])
					if err != nil {
						return err
					}
					raw, err := e.client.JSON(e.ctx, "POST", "/scheduling_policies", doc, nil)
					if err != nil {
						return err
					}
					return policyDone(e, raw, "created", doc["name"])
				}
			},
		},
		{
			name:    "policy update",
			args:    "NAME FILE|-",
			summary: "Replace a scheduling policy with a JSON file",
			example: "berth policy show spread -o json > spread.json && $EDITOR spread.json && berth policy update spread spread.json",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				return func(e *env, args []string) error {
					if err := argsN(args, "NAME", "FILE"); err != nil {
						return err
					}
					doc, err := readJSONFile(e, args[1])
					if err != nil {
						return err
					}
					if _, ok := doc["name"]; !ok {
						doc["name"] = args[0]
					}
					raw, err := e.client.JSON(e.ctx, "PUT", "/scheduling_policies/"+url.PathEscape(args[0]), doc, nil)
					if err != nil {
						return err
					}
					return policyDone(e, raw, "updated", args[0])
				}
			},
		},
		{
			name:    "policy delete",
			args:    "NAME",
			summary: "Delete a scheduling policy",
			example: "berth policy delete spread",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				return func(e *env, args []string) error {
					if err := argsN(args, "NAME"); err != nil {
						return err
					}
					if _, err := e.client.Do(e.ctx, "DELETE", "/scheduling_policies/"+url.PathEscape(args[0]), nil, ""); err != nil {
						return err
					}
					if !e.json() {
						fmt.Fprintf(e.io.Stdout, "Policy %s deleted.\n", args[0])
					}
					return nil
				}
			},
		},
		{
			name:    "policy balance",
			args:    "NAME [--aggregate UUID]",
			summary: "Ask a policy's balancer which consumer to move where (a suggestion; nothing moves)",
			help: `GET /scheduling_policies/NAME/balance: for "even" a provider above the high
utilisation threshold, for "power_saving" one below the low threshold to empty.
Carry a suggestion out with berth move CONSUMER --migration new --target P.`,
			example: "berth policy balance spread --aggregate 5e1f0a8e-0c2b-4f7e-9b8e-1a2b3c4d5e01",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				agg := fs.String("aggregate", "", "only providers in aggregate `UUID`")
				return func(e *env, args []string) error {
					if err := argsN(args, "NAME"); err != nil {
						return err
					}
					path := "/scheduling_policies/" + url.PathEscape(args[0]) + "/balance"
					if *agg != "" {
						path += "?" + url.Values{"aggregate": {*agg}}.Encode()
					}
					var doc map[string]json.RawMessage
					raw, err := e.client.JSON(e.ctx, "GET", path, nil, &doc)
					if err != nil {
						return err
					}
					if e.json() {
						return e.printJSON(raw)
					}
					return renderBalance(e.io.Stdout, doc)
				}
			},
		},
		{
			name:    "policy units",
			summary: "List the built-in filters and weighers a policy is made of, with their parameters",
			example: "berth policy units",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				kind := fs.String("kind", "", "only units of `KIND`: filter or weigher")
				return func(e *env, args []string) error {
					if err := argsN(args); err != nil {
						return err
					}
					var doc struct {
						Units []policyUnit `json:"policy_units"`
					}
					raw, err := e.client.JSON(e.ctx, "GET", "/policy_units", nil, &doc)
					if err != nil {
						return err
					}
					if e.json() {
						return e.printJSON(raw)
					}
					t := NewTable("NAME", "KIND", "PARAMETERS", "DESCRIPTION")
					for _, u := range doc.Units {
						if *kind != "" && u.Kind != *kind {
							continue
						}
						var ps []string
						for _, p := range u.Parameters {
							s := p.Name + ":" + p.Type
							if p.Required {
								s += "!"
							} else if p.Default == "" {
								s += `=""`
							} else if p.Default != nil {
								s += "=" + scalar(p.Default)
							}
							ps = append(ps, s)
						}
						t.Row(u.Name, u.Kind, list(ps), u.Description)
					}
					if t.Len() == 0 {
						fmt.Fprintln(e.io.Stdout, "No policy units.")
						return errNothing
					}
					if err := t.Render(e.io.Stdout); err != nil {
						return err
					}
					fmt.Fprintln(e.io.Stdout, "\nParameters: name:type=default; \"!\" marks a required one.")
					return nil
				}
			},
		},
	}
}

// balanceTarget is a provider in a balance suggestion.
type balanceTarget struct {
	UUID        string   `json:"uuid"`
	Name        string   `json:"name"`
	Utilisation *float64 `json:"utilisation"`
}

func (b balanceTarget) label() string {
	if b.Name == "" {
		return b.UUID
	}
	return b.Name
}

func utilisation(f *float64) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", *f*100)
}

// renderBalance prints a suggestion, or why there is none. The answer is
// either the suggestion itself or {"suggestion": null, ...}.
func renderBalance(w io.Writer, doc map[string]json.RawMessage) error {
	var reason string
	json.Unmarshal(doc["reason"], &reason)
	if s, ok := doc["suggestion"]; ok && string(s) == "null" {
		if reason == "" {
			reason = "the policy's thresholds hold"
		}
		fmt.Fprintf(w, "Nothing to move: %s.\n", strings.TrimSuffix(reason, "."))
		return nil
	} else if ok {
		var inner map[string]json.RawMessage
		if err := json.Unmarshal(s, &inner); err != nil {
			return fmt.Errorf("balance: unexpected suggestion %s", s)
		}
		doc = inner
		json.Unmarshal(doc["reason"], &reason)
	}
	var sug struct {
		Mode         string          `json:"mode"`
		Consumer     string          `json:"consumer_uuid"`
		Source       balanceTarget   `json:"source"`
		Destinations []balanceTarget `json:"destinations"`
	}
	b, _ := json.Marshal(doc)
	if err := json.Unmarshal(b, &sug); err != nil {
		return fmt.Errorf("balance: unexpected answer: %v", err)
	}
	fmt.Fprintf(w, "Suggestion (%s): move consumer %s off %s (utilisation %s).\n",
		sug.Mode, sug.Consumer, sug.Source.label(), utilisation(sug.Source.Utilisation))
	if reason != "" {
		fmt.Fprintf(w, "Reason: %s\n", reason)
	}
	if len(sug.Destinations) > 0 {
		fmt.Fprintln(w, "\nDestinations:")
		t := NewTable("PROVIDER", "UUID", "UTILISATION").AlignRight(2)
		for _, d := range sug.Destinations {
			t.Row(d.label(), d.UUID, utilisation(d.Utilisation))
		}
		t.Render(w)
		fmt.Fprintf(w, "\nTo carry it out: berth move %s --migration new --target %s\n", sug.Consumer, sug.Destinations[0].label())
	}
	return nil
}

func policyDone(e *env, raw []byte, what string, name any) error {
	if e.json() {
		if len(raw) > 0 {
			return e.printJSON(raw)
		}
		return nil
	}
	fmt.Fprintf(e.io.Stdout, "Policy %v %s.\n", name, what)
	return nil
}

func renderPolicy(w io.Writer, p *policy) {
	t := NewTable()
	t.Row("Name:", p.Name)
	t.Row("Description:", p.Description)
	t.Row("Default:", yesNo(p.Default))
	t.Row("Scriptlet:", strPtr(p.Scriptlet))
	bal := "-"
	if b := p.Balancer; b != nil {
		bal = b.Mode
		if b.High != nil || b.Low != nil {
			bal += fmt.Sprintf(" (high %s, low %s)", factor(b.High), factor(b.Low))
		}
	}
	t.Row("Balancer:", bal)
	t.Render(w)
	fmt.Fprintln(w, "\nFilters:")
	ft := NewTable("  NAME", "PARAMS")
	for _, f := range p.Filters {
		ft.Row("  "+f.Name, params(f.Params))
	}
	if len(p.Filters) == 0 {
		fmt.Fprintln(w, "  (capacity only)")
	} else {
		ft.Render(w)
	}
	fmt.Fprintln(w, "\nWeighers:")
	wt := NewTable("  NAME", "FACTOR", "PARAMS").AlignRight(1)
	for _, x := range p.Weighers {
		wt.Row("  "+x.Name, factor(x.Factor), params(x.Params))
	}
	if len(p.Weighers) == 0 {
		fmt.Fprintln(w, "  (none)")
	} else {
		wt.Render(w)
	}
}

func params(m map[string]any) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+"="+scalar(m[k]))
	}
	return strings.Join(parts, " ")
}

func factor(f *float64) string {
	if f == nil {
		return "1"
	}
	return num(*f)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func strPtr(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

func list(ss []string) string {
	if len(ss) == 0 {
		return "-"
	}
	return strings.Join(ss, ", ")
}
