package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
)

// The stored claim of a consumer: its request, where it landed, its state
// and lease (GET and PATCH /claims/{consumer_uuid}).

// storedClaim is the answer of GET and PATCH /claims/{consumer_uuid}.
type storedClaim struct {
	ConsumerUUID       string                `json:"consumer_uuid"`
	ConsumerGeneration *int64                `json:"consumer_generation"`
	Allocations        map[string]allocation `json:"allocations"`
	State              string                `json:"state"`
	LeaseSeconds       *int64                `json:"lease_seconds"`
	LeaseExpiresAt     *string               `json:"lease_expires_at"`
	Expired            bool                  `json:"expired"`
	Op                 string                `json:"op"`
	RootUUID           *string               `json:"root_provider_uuid"`
	MigrationUUID      *string               `json:"migration_uuid"`
	Request            json.RawMessage       `json:"request"`
	UpdatedAt          string                `json:"updated_at"`
}

func claimShowCommand() *command {
	return &command{
		name:    "claim show",
		args:    "CONSUMER",
		summary: "Show a consumer's stored claim: its request, where it landed, its state and lease",
		help: `The state is provisional (released when lease_expires_at passes, unless
confirmed or renewed first), permanent, or moving (a move in progress; with a
lease, the move is reverted when it runs out). A consumer whose allocations
were written through the Placement API has no stored claim.`,
		example: "berth claim show 5b0d3c52-8f1e-4a8e-9a55-3a2f0c1d9e77",
		setup: func(fs *flag.FlagSet) func(*env, []string) error {
			return func(e *env, args []string) error {
				if err := argsN(args, "CONSUMER"); err != nil {
					return err
				}
				return claimRequest(e, "GET", args[0], nil)
			}
		},
	}
}

// claimLeaseCommand is "claim renew" (withLease: --lease D required) or
// "claim confirm" (PATCH with a null lease).
func claimLeaseCommand(name, args, summary, example string, withLease bool) *command {
	return &command{
		name:    name,
		args:    args,
		summary: summary,
		help: `PATCH /claims/{consumer_uuid}. A claim whose lease has run out cannot be
renewed or confirmed (its allocations are being released); a permanent claim
cannot take a lease.`,
		example: example,
		setup: func(fs *flag.FlagSet) func(*env, []string) error {
			var lease time.Duration
			if withLease {
				fs.DurationVar(&lease, "lease", 0, "renew for `DURATION` from now (whole seconds, e.g. 30s, 10m)")
			}
			return func(e *env, args []string) error {
				if err := argsN(args, "CONSUMER"); err != nil {
					return err
				}
				body := map[string]any{"lease_seconds": nil}
				if withLease {
					if lease == 0 {
						return usagef("--lease is required, e.g. --lease 5m")
					}
					secs, err := leaseSeconds(lease)
					if err != nil {
						return err
					}
					body["lease_seconds"] = secs
				}
				return claimRequest(e, "PATCH", args[0], body)
			}
		},
	}
}

// claimRequest sends method to /claims/{consumer} with body (nil: none)
// and renders the stored claim it answers.
func claimRequest(e *env, method, consumer string, body any) error {
	var st storedClaim
	raw, err := e.client.JSON(e.ctx, method, "/claims/"+url.PathEscape(consumer), body, &st)
	if err != nil {
		return err
	}
	if e.json() {
		return e.printJSON(raw)
	}
	return renderStoredClaim(e.io.Stdout, &st)
}

// renderStoredClaim prints a stored claim: its state line, where it
// landed, the request, and what the consumer holds.
func renderStoredClaim(w io.Writer, st *storedClaim) error {
	state := st.State
	switch {
	case st.LeaseExpiresAt != nil && st.Expired:
		ending := "its allocations being released"
		if st.State == "moving" {
			ending = "the move being reverted"
		}
		state += fmt.Sprintf(", lease of %s ran out at %s, %s", seconds(st.LeaseSeconds), *st.LeaseExpiresAt, ending)
	case st.LeaseExpiresAt != nil:
		state += fmt.Sprintf(", lease of %s, expires at %s", seconds(st.LeaseSeconds), *st.LeaseExpiresAt)
	}
	fmt.Fprintf(w, "Claim of consumer %s (generation %s): %s.\n", st.ConsumerUUID, gen(st.ConsumerGeneration), state)
	root := "-"
	if st.RootUUID != nil {
		root = *st.RootUUID
	}
	fmt.Fprintf(w, "Last written by %s, on root provider %s, at %s.\n", st.Op, root, st.UpdatedAt)
	if st.MigrationUUID != nil {
		fmt.Fprintf(w, "Move in progress: the source is held by migration %s.\n", *st.MigrationUUID)
	}
	if len(st.Request) > 0 {
		fmt.Fprintf(w, "Request: %s\n", strings.TrimSpace(string(st.Request)))
	}
	fmt.Fprintln(w)
	return renderAllocations(w, st.Allocations, nil)
}

// seconds words a lease length.
func seconds(n *int64) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprintf("%ds", *n)
}
