package cli

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// auditPageSize is the findings berth audit asks for per request.
const auditPageSize = 500

// auditFinding is a finding of GET /audit, as far as berth shows it.
type auditFinding struct {
	Kind     string `json:"kind"`
	Consumer *struct {
		UUID       string `json:"uuid"`
		Generation int64  `json:"generation"`
	} `json:"consumer"`
	Provider  *auditProvider  `json:"provider"`
	Providers []auditProvider `json:"providers"`
	Consumers []string        `json:"consumers"`
	Count     int             `json:"consumer_count"`
	Age       int64           `json:"age_seconds"`
	Detail    string          `json:"detail"`
	Fix       struct {
		Action string `json:"action"`
		Detail string `json:"detail"`
	} `json:"fix"`
}

type auditProvider struct {
	UUID      string             `json:"uuid"`
	Name      string             `json:"name"`
	Resources map[string]int64   `json:"resources"`
	Capacity  map[string]float64 `json:"capacity"`
}

// auditPage is GET /audit's body; Findings stay raw for -o json.
type auditPage struct {
	Findings   []auditFinding `json:"findings"`
	NextMarker *string        `json:"next_marker"`
	Thresholds struct {
		MigrationAge string `json:"migration_age"`
		StateAge     string `json:"state_age"`
	} `json:"thresholds"`
}

func auditCommand() *command {
	return &command{
		name:    "audit",
		args:    "[--kind KIND,...] [--migration-age D] [--state-age D] [--fix [--yes]]",
		summary: "Find orphaned and wrong allocations (GET /audit); --fix the safe cases",
		help: `Lists every finding of GET /audit, page by page: split_consumer (a consumer
on two root providers outside a move), stale_migration (a MIGRATION consumer
older than --migration-age), stale_provider (allocations on a provider that
has not reported its state for --state-age), over_capacity (more allocated
than an inventory lowered since allows), empty_consumer (a consumer without
allocations), expired_lease (a claim whose lease ran out over a minute ago
and still holds allocations), partial_gang (a gang's member that holds
allocations while another member holds none), preempted_consumer (a consumer
a claim preempted that holds allocations again without a claim: its instance
probably still runs), preemptible_empty (a preemptible claim whose consumer
holds nothing though no claim preempted it). FIX says what --fix would do: confirm_move (a
stale move of Berth's claims whose instance is settled), delete_consumer,
release_lease (as the lease reaper would), or report_only.

--fix asks before it fixes (unless --yes), then sends one POST /audit/fix per
fixable finding listed, with the consumer generation listed: the server
re-checks each in one transaction and refuses (409) one that changed since.

Exit status: 0 nothing found (or all fixed), 5 findings remain (nova-manage
placement audit says so with 3, which is a refusal for berth), 3 the server
refused a request or a fix, 4 the server could not be reached, 2 bad usage.`,
		example: `berth audit
berth audit --kind stale_migration --migration-age 2h
berth audit --fix --yes`,
		setup: func(fs *flag.FlagSet) func(*env, []string) error {
			var kinds multiFlag
			fs.Var(&kinds, "kind", "only findings of `KIND` (repeatable or comma-separated)")
			migrationAge := fs.String("migration-age", "", "a migration older than `D` is stale (server default: 24h)")
			stateAge := fs.String("state-age", "", "a provider report older than `D` is stale (server default: 1h)")
			fix := fs.Bool("fix", false, "fix the findings that have a safe fix, after asking")
			yes := fs.Bool("yes", false, "with --fix: do not ask")
			return func(e *env, args []string) error {
				if err := argsN(args); err != nil {
					return err
				}
				if *yes && !*fix {
					return usagef("--yes goes with --fix")
				}
				q := url.Values{"limit": {strconv.Itoa(auditPageSize)}}
				for _, k := range kinds {
					q.Add("kind", k)
				}
				for name, v := range map[string]string{"migration_age": *migrationAge, "state_age": *stateAge} {
					if v == "" {
						continue
					}
					if _, err := time.ParseDuration(v); err != nil {
						return usagef("--%s: %q is not a duration such as 90m or 24h", strings.ReplaceAll(name, "_", "-"), v)
					}
					q.Set(name, v)
				}
				return runAudit(e, q, *fix, *yes)
			}
		},
	}
}

// runAudit lists every finding, shows them, and fixes the fixable ones
// when fix is set.
func runAudit(e *env, q url.Values, fix, yes bool) error {
	var all []auditFinding
	var raw []any
	var page auditPage
	for {
		var rawPage struct {
			Findings []any `json:"findings"`
		}
		body, err := e.client.JSON(e.ctx, "GET", "/audit?"+q.Encode(), nil, &page)
		if err != nil {
			return err
		}
		if e.json() {
			if err := json.Unmarshal(body, &rawPage); err != nil {
				return err
			}
			raw = append(raw, rawPage.Findings...)
		}
		all = append(all, page.Findings...)
		if page.NextMarker == nil {
			break
		}
		q.Set("marker", *page.NextMarker)
	}
	var fixable []auditFinding
	for _, f := range all {
		if f.Fix.Action != "report_only" && f.Consumer != nil {
			fixable = append(fixable, f)
		}
	}
	out := map[string]any{"findings": raw}
	if !e.json() {
		renderAudit(e.io.Stdout, all, len(fixable))
	}
	fixed, failed := 0, 0
	if fix && len(fixable) > 0 {
		if !yes && !confirm(e, fmt.Sprintf("Fix %d finding(s)? [y/N] ", len(fixable))) {
			fmt.Fprintln(e.io.Stderr, "Nothing fixed.")
		} else {
			var done []any
			fixed, failed, done = fixAll(e, fixable, page)
			out["fixed"] = done
		}
	}
	if e.json() {
		if raw == nil {
			out["findings"] = []any{}
		}
		if err := e.printValue(out); err != nil {
			return err
		}
	}
	switch {
	case failed > 0:
		return exitCode(exitRefused) // a fix the server refused; its error was printed
	case len(all) > fixed:
		return exitCode(exitFindings)
	}
	return nil
}

// fixAll sends one POST /audit/fix per finding, with the thresholds it
// was listed with, and says how each went.
func fixAll(e *env, fs []auditFinding, listed auditPage) (fixed, failed int, done []any) {
	for _, f := range fs {
		body := map[string]any{"kind": f.Kind, "consumer_uuid": f.Consumer.UUID,
			"consumer_generation": f.Consumer.Generation,
			"migration_age":       listed.Thresholds.MigrationAge, "state_age": listed.Thresholds.StateAge}
		var ans map[string]any
		_, err := e.client.JSON(e.ctx, "POST", "/audit/fix", body, &ans)
		if err != nil {
			failed++
			fmt.Fprintf(e.io.Stderr, "Not fixed: %s %s: %s\n", f.Kind, Printable(f.Consumer.UUID), Printable(err.Error()))
			continue
		}
		fixed++
		done = append(done, ans["fixed"])
		if !e.json() {
			fmt.Fprintf(e.io.Stdout, "Fixed: %s %s (%s).\n", f.Kind, Printable(f.Consumer.UUID), f.Fix.Action)
		}
	}
	return fixed, failed, done
}

// confirm asks question on stderr and reads the answer from stdin: true
// for y or yes.
func confirm(e *env, question string) bool {
	fmt.Fprint(e.io.Stderr, question)
	line, err := bufio.NewReader(e.io.Stdin).ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(e.io.Stderr)
		return false
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}

// renderAudit writes the findings as a table and a summary line.
func renderAudit(w io.Writer, fs []auditFinding, fixable int) {
	if len(fs) == 0 {
		fmt.Fprintln(w, "No findings.")
		return
	}
	t := NewTable("KIND", "SUBJECT", "AGE", "HELD", "FIX", "DETAIL")
	for _, f := range fs {
		subject := ""
		if f.Consumer != nil {
			subject = f.Consumer.UUID
		} else if f.Provider != nil {
			subject = f.Provider.Name
		}
		t.Row(f.Kind, Printable(subject), auditAge(f.Age), Printable(held(f)), f.Fix.Action, Printable(f.Detail))
	}
	t.Render(w)
	fmt.Fprintf(w, "\n%d finding(s); %d can be fixed with --fix, %d are reported only.\n", len(fs), fixable, len(fs)-fixable)
}

// held sums up a finding's amounts: per provider its classes, and for
// over_capacity used/capacity per class.
func held(f auditFinding) string {
	if f.Kind == "over_capacity" && f.Provider != nil {
		var parts []string
		for _, c := range sortedKeys(f.Provider.Resources) {
			parts = append(parts, fmt.Sprintf("%s=%d/%g", c, f.Provider.Resources[c], f.Provider.Capacity[c]))
		}
		return strings.Join(parts, ",")
	}
	var parts []string
	for _, p := range f.Providers {
		var res []string
		for _, c := range sortedKeys(p.Resources) {
			res = append(res, fmt.Sprintf("%s=%d", c, p.Resources[c]))
		}
		parts = append(parts, p.Name+": "+strings.Join(res, ","))
	}
	s := strings.Join(parts, "; ")
	if s == "" {
		s = "-"
	}
	return s
}

// auditAge is an age in seconds, coarsely: <1m, 5m, 3h, 2d.
func auditAge(s int64) string {
	switch {
	case s < 60:
		return "<1m"
	case s < 3600:
		return fmt.Sprintf("%dm", s/60)
	case s < 2*86400:
		return fmt.Sprintf("%dh", s/3600)
	}
	return fmt.Sprintf("%dd", s/86400)
}
