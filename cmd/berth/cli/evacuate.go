package cli

import (
	"flag"
	"fmt"
	"net/url"

	"github.com/berthd/berth/httpapi/client"
	"github.com/berthd/berth/internal/uuid"
)

// evacuateCommands are berth evacuate and berth restore: a whole host
// out of service and back (POST /resource_providers/{uuid}/evacuate and
// .../restore).
func evacuateCommands() []*command {
	return []*command{
		{
			name:    "evacuate",
			args:    "PROVIDER [--dry-run] [--confirm] [--parallel N] [--policy NAME] [--mode MODE]",
			summary: "Move every consumer off a host and keep new claims away from it",
			help: `PROVIDER is a root provider's uuid or name. It is marked evacuated (claims
avoid it until "berth restore"), and each consumer it holds is moved with
reason "evacuation": the scheduling policy and its scriptlet choose each
destination, the host itself is never a candidate. Moves run --parallel at a
time, a page of them per request, with a progress bar on a terminal. Each is
a move as "berth move" makes it: the source stays held by a migration
consumer until "berth move-confirm", unless --confirm confirms at once (a
host that is gone). --confirm also confirms the moves earlier evacuations
of the host left unconfirmed: "berth evacuate HOST --confirm" after an
evacuation confirms all its moves at once, and says how many. What could not move (nothing fits, the scriptlet
refused) stays and is listed; running the command again retries it.
--dry-run plans each move without writing anything. --mode is LXD's and
Incus's: auto (the default) leaves a consumer whose claim's instance sets
cluster.evacuate "stop" on the host, migrate moves every one, stop moves
none (the host is only marked). Exit status 1 when some consumer failed to
move (or would fail); one left by the mode is listed as skipped.`,
			example: "berth evacuate cn1 --dry-run\nberth evacuate cn1 --parallel 8",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				dry := fs.Bool("dry-run", false, "plan the moves, write nothing")
				confirm := fs.Bool("confirm", false, "confirm each move at once (drop the source's allocations)")
				parallel := fs.Int("parallel", 4, "`N` moves at once, 1..32")
				policy := fs.String("policy", "", "scheduling policy `NAME` of the moves (server default when empty)")
				mode := fs.String("mode", "", "`MODE`: auto, migrate or stop (server default: auto)")
				return func(e *env, args []string) error {
					if err := argsN(args, "PROVIDER"); err != nil {
						return err
					}
					if *parallel < 1 || *parallel > 32 {
						return usagef("--parallel must be 1 to 32")
					}
					rp, err := providerByRef(e, args[0])
					if err != nil {
						return err
					}
					body := map[string]any{"dry_run": *dry, "confirm": *confirm, "parallel": *parallel}
					if *policy != "" {
						body["policy"] = *policy
					}
					if *mode != "" {
						body["mode"] = *mode
					}
					ev, err := evacuate(e, rp, body, *parallel)
					if err != nil {
						return err
					}
					return printEvacuation(e, ev)
				}
			},
		},
		{
			name:    "restore",
			args:    "PROVIDER",
			summary: "Make an evacuated host a candidate for claims again",
			help: `PROVIDER is a root provider's uuid or name. Its consumers stay where the
evacuation moved them.`,
			example: "berth restore cn1",
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				return func(e *env, args []string) error {
					if err := argsN(args, "PROVIDER"); err != nil {
						return err
					}
					rp, err := providerByRef(e, args[0])
					if err != nil {
						return err
					}
					var mark evacuationMark
					raw, err := e.client.JSON(e.ctx, "POST", "/resource_providers/"+url.PathEscape(rp)+"/restore", map[string]any{}, &mark)
					if err != nil {
						return err
					}
					if e.json() {
						return e.printJSON(raw)
					}
					fmt.Fprintf(e.io.Stdout, "%s restored: claims may place on it again.\n", Printable(mark.Name))
					return nil
				}
			},
		},
	}
}

// providerByRef is the uuid of the provider ref names: ref itself when
// it is a uuid, else the provider of that name (none: exit status 1).
func providerByRef(e *env, ref string) (string, error) {
	if uuid.Valid(ref) {
		return ref, nil
	}
	var doc struct {
		Providers []struct {
			UUID string `json:"uuid"`
		} `json:"resource_providers"`
	}
	if _, err := e.client.JSON(e.ctx, "GET", "/resource_providers?name="+url.QueryEscape(ref), nil, &doc); err != nil {
		return "", err
	}
	if len(doc.Providers) == 0 {
		return "", nothingFound{fmt.Errorf("no resource provider named %q", ref)}
	}
	return doc.Providers[0].UUID, nil
}

// evacuationMark is a provider's evacuation mark as the API answers it.
type evacuationMark struct {
	UUID        string  `json:"resource_provider_uuid"`
	Name        string  `json:"name"`
	Evacuated   bool    `json:"evacuated"`
	EvacuatedAt *string `json:"evacuated_at"`
}

// evacuation is one answer of POST .../evacuate, or the pages of one
// run put together.
type evacuation struct {
	evacuationMark
	DryRun    bool                       `json:"dry_run"`
	Consumers []client.EvacuatedConsumer `json:"consumers"`
	Remaining int                        `json:"remaining"`
	Pending   int                        `json:"pending"`
	Next      *string                    `json:"next"`
}

// evacuate runs the evacuation of rp (or plans it) a page of 4×parallel
// consumers at a time, drawing the progress, and returns the pages put
// together.
func evacuate(e *env, rp string, body map[string]any, parallel int) (*evacuation, error) {
	path := "/resource_providers/" + url.PathEscape(rp) + "/evacuate"
	body["limit"] = 4 * parallel
	var all *evacuation
	var bar *Progress
	defer func() {
		if bar != nil {
			bar.Clear()
		}
	}()
	done := 0
	for {
		var page evacuation
		if _, err := e.client.JSON(e.ctx, "POST", path, body, &page); err != nil {
			return nil, err
		}
		if all == nil {
			all = &page
			bar = NewProgress(e.io.Stderr, e.io.StderrTTY, "evacuate "+Printable(page.Name), 0)
		} else {
			all.Consumers = append(all.Consumers, page.Consumers...)
			all.evacuationMark = page.evacuationMark
		}
		for _, c := range page.Consumers {
			if c.Status != "skipped" {
				done++
			}
		}
		bar.Set(done, done+page.Pending)
		if page.Next == nil {
			all.Remaining, all.Pending, all.Next = 0, 0, nil
			for _, c := range all.Consumers {
				if c.Status == "failed" || c.Status == "planned" {
					all.Remaining++
				}
			}
			return all, nil
		}
		body["after"] = *page.Next
	}
}

// printEvacuation prints what happened to each consumer and a summary;
// exit status 1 when some consumer did not (or would not) move.
func printEvacuation(e *env, ev *evacuation) error {
	counts := map[string]int{}
	failed := false
	for _, c := range ev.Consumers {
		counts[c.Status]++
		failed = failed || c.Status == "failed"
	}
	if e.json() {
		return found(!failed, e.printValue(ev))
	}
	if len(ev.Consumers) > 0 {
		t := NewTable("CONSUMER", "NAME", "STATUS", "DESTINATION", "DETAIL")
		for _, c := range ev.Consumers {
			dest, detail := "-", "-"
			if c.Destination != nil {
				dest = c.Destination.Name
			}
			switch {
			case c.Status == "confirmed" && c.MigrationUUID != nil:
				detail = "source held by migration " + *c.MigrationUUID + " dropped"
			case c.Detail != nil:
				detail = *c.Detail
			case c.Confirmed:
				detail = "confirmed"
			case c.MigrationUUID != nil:
				detail = "source held by migration " + *c.MigrationUUID
			}
			t.Row(c.ConsumerUUID, orDash(c.Name), c.Status, dest, detail)
		}
		if err := t.Render(e.io.Stdout); err != nil {
			return err
		}
		fmt.Fprintln(e.io.Stdout)
	}
	what := "evacuated"
	if ev.DryRun {
		what = "evacuation planned"
		if !ev.Evacuated {
			what += " (not evacuated)"
		}
	}
	fmt.Fprintf(e.io.Stdout, "%s %s: %d moved, %d planned, %d failed, %d skipped", Printable(ev.Name), what,
		counts["moved"], counts["planned"], counts["failed"], counts["skipped"])
	if n := counts["confirmed"]; n > 0 {
		fmt.Fprintf(e.io.Stdout, "; %d earlier moves confirmed", n)
	}
	fmt.Fprintln(e.io.Stdout, ".")
	return found(!failed, nil)
}

// orDash is s, or "-" when empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
