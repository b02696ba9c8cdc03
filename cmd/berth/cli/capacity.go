package cli

import (
	"flag"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// capacityAnswer is GET /capacity's body.
type capacityAnswer struct {
	Total     int64 `json:"total"`
	Capped    bool  `json:"capped"`
	Truncated bool  `json:"truncated"`
	Roots     []struct {
		UUID     string   `json:"root_provider_uuid"`
		Name     string   `json:"name"`
		Fits     int64    `json:"fits"`
		Capped   bool     `json:"capped"`
		Limiting []string `json:"limiting"`
	} `json:"roots"`
	Aggregates []struct {
		UUID string `json:"uuid"`
		Fits int64  `json:"fits"`
	} `json:"aggregates"`
}

func capacityCommand() *command {
	return &command{
		name:    "capacity",
		args:    "--resources CLASS:N,... [--required TRAITS] [--member-of AGGS] [flags]",
		summary: "How many more instances of one shape fit, per root provider, per aggregate and in total",
		help: `Asks GET /capacity, which counts with the same rules as GET /allocation_candidates:
traits, aggregates, reserved, allocation ratios, min/max unit and step size.
LIMITING names the classes that run out first on each provider. A count
shown with "+" reached the server's cap per provider (--max).`,
		example: `berth capacity --resources VCPU:4,MEMORY_MB:16384
berth capacity --resources VCPU:2 --required HW_CPU_X86_AVX2 --member-of 7b1e...`,
		setup: func(fs *flag.FlagSet) func(*env, []string) error {
			resources := fs.String("resources", "", "the shape, `CLASS:N,...` (required)")
			var required, memberOf multiFlag
			fs.Var(&required, "required", "`TRAITS` as Placement's required (repeatable), e.g. HW_CPU_X86_AVX2,!CUSTOM_SLOW")
			fs.Var(&memberOf, "member-of", "`AGGS` as Placement's member_of (repeatable), e.g. in:AGG1,AGG2")
			maxPer := fs.Int("max", 0, "cap the count per provider at `N` (server default when 0)")
			limit := fs.Int("limit", 0, "list at most `N` providers (0: all)")
			return func(e *env, args []string) error {
				if err := argsN(args); err != nil {
					return err
				}
				if *resources == "" {
					return usagef("--resources is required, e.g. --resources VCPU:4,MEMORY_MB:16384")
				}
				res, err := ParseResources(*resources)
				if err != nil {
					return usagef("%v", err)
				}
				q := url.Values{"resources": {FormatResources(res)}}
				for _, r := range required {
					q.Add("required", r)
				}
				for _, m := range memberOf {
					q.Add("member_of", m)
				}
				if *maxPer > 0 {
					q.Set("max", strconv.Itoa(*maxPer))
				}
				if *limit > 0 {
					q.Set("limit", strconv.Itoa(*limit))
				}
				var ans capacityAnswer
				raw, err := e.client.JSON(e.ctx, "GET", "/capacity?"+q.Encode(), nil, &ans)
				if err != nil {
					return err
				}
				if e.json() {
					return found(len(ans.Roots) > 0, e.printJSON(raw))
				}
				return found(len(ans.Roots) > 0, renderCapacity(e, &ans, FormatResources(res)))
			}
		},
	}
}

func renderCapacity(e *env, ans *capacityAnswer, shape string) error {
	w := e.io.Stdout
	t := NewTable("PROVIDER", "UUID", "FITS", "LIMITING").AlignRight(2)
	for _, r := range ans.Roots {
		fits := strconv.FormatInt(r.Fits, 10)
		if r.Capped {
			fits += "+"
		}
		limiting := strings.Join(r.Limiting, ",")
		if limiting == "" {
			limiting = "-"
		}
		t.Row(r.Name, r.UUID, fits, limiting)
	}
	if t.Len() > 0 {
		if err := t.Render(w); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(w, "No provider can take one more.")
	}
	if len(ans.Aggregates) > 0 {
		fmt.Fprintln(w)
		at := NewTable("AGGREGATE", "FITS").AlignRight(1)
		for _, a := range ans.Aggregates {
			at.Row(a.UUID, strconv.FormatInt(a.Fits, 10))
		}
		at.Render(w)
	}
	total := strconv.FormatInt(ans.Total, 10)
	if ans.Capped {
		total = "at least " + total
	}
	fmt.Fprintf(w, "\nTotal: %s more of %s fit", total, shape)
	if ans.Truncated {
		fmt.Fprint(w, " (the server's counting budget ran out: counts are lower bounds)")
	}
	fmt.Fprintln(w, ".")
	return nil
}
