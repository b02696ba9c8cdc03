package cli

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
)

// shadowCommands are "berth scriptlet shadow start|show|stop" (group
// "scriptlet") and "berth policy shadow ..." (group "policy"): a stored
// scriptlet or scheduling policy run beside every real claim of the
// default policy (PUT/GET/DELETE /scriptlets/NAME/shadow,
// /scheduling_policies/NAME/shadow).
func shadowCommands(group string) []*command {
	base, what, example := "/scriptlets/", "scriptlet", "prefer-rack-a"
	if group == "policy" {
		base, what, example = "/scheduling_policies/", "scheduling policy", "pack"
	}
	path := func(name string) string { return base + url.PathEscape(name) + "/shadow" }
	return []*command{
		{
			name:    group + " shadow start",
			args:    "NAME",
			summary: "Run the " + what + " NAME in shadow of every claim the default policy ranks",
			help: `The shadow ranks the same candidates for the same request as the claim,
after the claim is answered and without affecting it, and counts how often
its first choice agrees with the claim's, what it would refuse and how it
fails. "berth ` + group + ` shadow show NAME" reports it; stop it with
"berth ` + group + ` shadow stop NAME".`,
			example: "berth " + group + " shadow start " + example,
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				return func(e *env, args []string) error {
					if err := argsN(args, "NAME"); err != nil {
						return err
					}
					var rep shadowReport
					raw, err := e.client.JSON(e.ctx, "PUT", path(args[0]), nil, &rep)
					if err != nil {
						return err
					}
					if e.json() {
						return e.printJSON(raw)
					}
					fmt.Fprintf(e.io.Stdout, "Shadow of %s %s started.\n", what, args[0])
					return nil
				}
			},
		},
		{
			name:    group + " shadow show",
			args:    "NAME",
			summary: "Report what the shadow of the " + what + " NAME counted since it started",
			example: "berth " + group + " shadow show " + example,
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				return func(e *env, args []string) error {
					if err := argsN(args, "NAME"); err != nil {
						return err
					}
					var rep shadowReport
					raw, err := e.client.JSON(e.ctx, "GET", path(args[0]), nil, &rep)
					if err != nil {
						return err
					}
					if e.json() {
						return e.printJSON(raw)
					}
					return renderShadow(e.io.Stdout, &rep)
				}
			},
		},
		{
			name:    group + " shadow stop",
			args:    "NAME",
			summary: "Stop the shadow of the " + what + " NAME (its counts are forgotten)",
			example: "berth " + group + " shadow stop " + example,
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				return func(e *env, args []string) error {
					if err := argsN(args, "NAME"); err != nil {
						return err
					}
					if _, err := e.client.Do(e.ctx, "DELETE", path(args[0]), nil, ""); err != nil {
						return err
					}
					if !e.json() {
						fmt.Fprintf(e.io.Stdout, "Shadow of %s %s stopped.\n", what, args[0])
					}
					return nil
				}
			},
		},
	}
}

// shadowReport is the answer of GET /scriptlets/{name}/shadow (and the
// policy's).
type shadowReport struct {
	Kind        string `json:"kind"`
	Name        string `json:"name"`
	StartedAt   string `json:"started_at"`
	ClaimsSeen  int64  `json:"claims_seen"`
	Agreed      int64  `json:"agreed"`
	Disagreed   int64  `json:"disagreed"`
	WouldRefuse int64  `json:"would_refuse"`
	// WouldPreempt: the claims the shadow would preempt for, and the
	// consumers it would displace.
	WouldPreempt struct {
		Claims  int64 `json:"claims"`
		Victims int64 `json:"victims"`
	} `json:"would_preempt"`
	Dropped  int64 `json:"dropped"`
	Refusals []struct {
		Message string `json:"message"`
		Count   int64  `json:"count"`
	} `json:"refusals"`
	Failures struct {
		Steps        int64 `json:"steps"`
		Memory       int64 `json:"memory"`
		Deadline     int64 `json:"deadline"`
		RuntimeError int64 `json:"runtime_error"`
	} `json:"failures"`
	Cost struct {
		TotalMS float64 `json:"total_ms"`
		MeanMS  float64 `json:"mean_ms"`
	} `json:"cost"`
	Disagreements []struct {
		SeenAt       string  `json:"seen_at"`
		ConsumerUUID string  `json:"consumer_uuid"`
		Name         *string `json:"name"`
		ProjectID    string  `json:"project_id"`
		Claim        struct {
			Root     *string `json:"root_provider_uuid"`
			RootName *string `json:"root_provider_name"`
			Refused  *string `json:"refused"`
		} `json:"claim"`
		Shadow struct {
			Root     *string `json:"root_provider_uuid"`
			RootName *string `json:"root_provider_name"`
		} `json:"shadow"`
	} `json:"disagreements"`
}

// renderShadow prints a shadow's report: the counts, the refusals, the
// last disagreements.
func renderShadow(w io.Writer, r *shadowReport) error {
	pct := func(n int64) string {
		if r.ClaimsSeen == 0 {
			return "-"
		}
		return strconv.FormatFloat(100*float64(n)/float64(r.ClaimsSeen), 'f', 1, 64) + "%"
	}
	fmt.Fprintf(w, "Shadow of %s %s, since %s\n\n", r.Kind, Printable(r.Name), r.StartedAt)
	t := NewTable("", "CLAIMS", "SHARE").AlignRight(1, 2)
	t.Row("seen", fmt.Sprint(r.ClaimsSeen), "")
	t.Row("agreed", fmt.Sprint(r.Agreed), pct(r.Agreed))
	t.Row("disagreed", fmt.Sprint(r.Disagreed), pct(r.Disagreed))
	t.Row("would refuse", fmt.Sprint(r.WouldRefuse), pct(r.WouldRefuse))
	t.Row("would preempt", fmt.Sprint(r.WouldPreempt.Claims), pct(r.WouldPreempt.Claims))
	t.Row("  consumers displaced", fmt.Sprint(r.WouldPreempt.Victims), "")
	f := r.Failures
	t.Row("failed: steps", fmt.Sprint(f.Steps), pct(f.Steps))
	t.Row("failed: memory", fmt.Sprint(f.Memory), pct(f.Memory))
	t.Row("failed: deadline", fmt.Sprint(f.Deadline), pct(f.Deadline))
	t.Row("failed: runtime error", fmt.Sprint(f.RuntimeError), pct(f.RuntimeError))
	t.Row("not shadowed (busy)", fmt.Sprint(r.Dropped), "")
	if err := t.Render(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nCost: %.1f ms in all, %.3f ms a claim.\n", r.Cost.TotalMS, r.Cost.MeanMS)
	if len(r.Refusals) > 0 {
		fmt.Fprintln(w, "\nWould refuse with:")
		t := NewTable("COUNT", "MESSAGE").AlignRight(0)
		for _, x := range r.Refusals {
			t.Row(fmt.Sprint(x.Count), Printable(x.Message))
		}
		if err := t.Render(w); err != nil {
			return err
		}
	}
	if len(r.Disagreements) > 0 {
		fmt.Fprintln(w, "\nLast disagreements (newest first):")
		t := NewTable("SEEN", "CONSUMER", "NAME", "PROJECT", "CLAIM CHOSE", "SHADOW CHOSE")
		for _, d := range r.Disagreements {
			claim := firstOrDash(d.Claim.RootName, d.Claim.Root)
			if d.Claim.Refused != nil {
				claim = "refused: " + *d.Claim.Refused
			}
			t.Row(d.SeenAt, d.ConsumerUUID, firstOrDash(d.Name, nil), d.ProjectID, Printable(claim),
				Printable(firstOrDash(d.Shadow.RootName, d.Shadow.Root)))
		}
		return t.Render(w)
	}
	return nil
}

// firstOrDash is the first non-null of a and b, or "-".
func firstOrDash(a, b *string) string {
	switch {
	case a != nil:
		return *a
	case b != nil:
		return *b
	}
	return "-"
}
