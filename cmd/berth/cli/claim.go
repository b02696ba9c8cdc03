package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/berthd/berth/httpapi/client"
	"github.com/berthd/berth/internal/uuid"
)

// claimFlags are the selection flags of explain, claim, reschedule, move
// and scriptlet test; body turns them into a POST /claims body.
type claimFlags struct {
	resources, policy, target, name, project, user, consumer string
	consumerType, reason, inTree, groupPolicy, instance      string
	required, memberOf, exclude, properties, keys, sysKeys   multiFlag
	alternates, generation, maxAttempts                      int
	lease                                                    time.Duration
}

// register adds the flags to fs; forNew adds the ones that only make sense
// when the command names no existing consumer (--consumer,
// --consumer-generation).
func (c *claimFlags) register(fs *flag.FlagSet, forNew bool) {
	c.generation = -1
	fs.StringVar(&c.resources, "resources", "", "the shape, `CLASS:N,...`, e.g. VCPU:4,MEMORY_MB:16384")
	fs.Var(&c.required, "required", "`TRAITS` as Placement's required (repeatable), e.g. HW_CPU_X86_AVX2,!CUSTOM_SLOW")
	fs.Var(&c.memberOf, "member-of", "`AGGS` as Placement's member_of (repeatable), e.g. in:AGG1,AGG2")
	fs.StringVar(&c.inTree, "in-tree", "", "only the tree of provider `UUID`")
	fs.StringVar(&c.groupPolicy, "group-policy", "", "`POLICY`: none or isolate")
	fs.StringVar(&c.policy, "policy", "", "scheduling policy `NAME` (server default when empty)")
	fs.StringVar(&c.target, "target", "", "pin to this root `PROVIDER` (uuid or name)")
	fs.Var(&c.exclude, "exclude", "avoid these root `PROVIDERS`, uuids or names (repeatable or comma-separated)")
	fs.StringVar(&c.name, "name", "", "the instance's `NAME`, seen by scriptlets")
	fs.Var(&c.properties, "property", "`KEY=VALUE` handed to filters and scriptlets (repeatable; VALUE may be JSON)")
	fs.StringVar(&c.instance, "instance", "", "LXD's instance placement request, a JSON `OBJECT` handed to scriptlets, e.g. '{\"config\": {\"limits.cpu\": \"2\"}}'")
	fs.Var(&c.keys, "key", "customer placement key `NAME=VALUE[:WEIGHT]` (repeatable)")
	fs.Var(&c.sysKeys, "system-key", "system placement key `NAME=VALUE[:WEIGHT]` (repeatable)")
	fs.StringVar(&c.project, "project", "", "`PROJECT` id of the consumer")
	fs.StringVar(&c.user, "user", "", "`USER` id of the consumer")
	if forNew {
		fs.StringVar(&c.consumer, "consumer", "", "consumer `UUID` (a new random one when empty)")
		fs.IntVar(&c.generation, "consumer-generation", -1, "replace the allocations of an existing consumer at generation `N`")
	}
	fs.StringVar(&c.consumerType, "consumer-type", "", "consumer `TYPE`, e.g. INSTANCE")
	fs.StringVar(&c.reason, "reason", "", "`REASON`: new, evacuation, relocation, rebalance or reschedule (server default: new)")
	fs.IntVar(&c.alternates, "alternates", -1, "`N` alternates to return unclaimed (server default: 2)")
	fs.IntVar(&c.maxAttempts, "max-attempts", 0, "`N` writes to try before giving up, 1..50 (server default)")
	fs.DurationVar(&c.lease, "lease", 0, "make the claim provisional for `DURATION` (whole seconds, e.g. 30s): released then\n"+
		"unless confirmed (berth claim confirm) or renewed (berth claim renew); for a move, reverted")
}

// body builds the request. needResources: the shape is required (a new
// claim); needOwner: project and user are required (a real claim; a dry
// run gets placeholders).
func (c *claimFlags) body(needResources, needOwner bool) (map[string]any, error) {
	b := map[string]any{}
	if c.resources != "" {
		res, err := ParseResources(c.resources)
		if err != nil {
			return nil, usagef("%v", err)
		}
		b["resources"] = res
	} else if needResources {
		return nil, usagef("--resources is required, e.g. --resources VCPU:4,MEMORY_MB:16384")
	}
	consumer := c.consumer
	if consumer == "" {
		consumer = uuid.New()
	}
	b["consumer_uuid"] = consumer
	project, user := c.project, c.user
	if needOwner && (project == "" || user == "") {
		return nil, usagef("--project and --user are required")
	}
	if project == "" {
		project = "berth-explain"
	}
	if user == "" {
		user = "berth-explain"
	}
	b["project_id"], b["user_id"] = project, user
	set := func(k, v string) {
		if v != "" {
			b[k] = v
		}
	}
	set("name", c.name)
	set("policy", c.policy)
	set("target", c.target)
	set("consumer_type", c.consumerType)
	set("reason", c.reason)
	set("in_tree", c.inTree)
	set("group_policy", c.groupPolicy)
	if len(c.required) > 0 {
		b["required"] = []string(c.required)
	}
	if len(c.memberOf) > 0 {
		b["member_of"] = []string(c.memberOf)
	}
	var exclude []string
	for _, x := range c.exclude {
		for _, p := range strings.Split(x, ",") {
			if p = strings.TrimSpace(p); p != "" {
				exclude = append(exclude, p)
			}
		}
	}
	if len(exclude) > 0 {
		b["exclude_providers"] = exclude
	}
	if c.instance != "" {
		var inst map[string]any
		if err := json.Unmarshal([]byte(c.instance), &inst); err != nil || inst == nil {
			return nil, usagef("--instance must be a JSON object, e.g. '{\"name\": \"c1\"}'")
		}
		b["instance"] = inst
	}
	if len(c.properties) > 0 {
		props := map[string]any{}
		for _, p := range c.properties {
			k, v, err := parseProperty(p)
			if err != nil {
				return nil, usagef("%v", err)
			}
			props[k] = v
		}
		b["properties"] = props
	}
	var keys []map[string]any
	for i, list := range []multiFlag{c.keys, c.sysKeys} {
		for _, s := range list {
			k, err := parseKey(s, i == 1)
			if err != nil {
				return nil, usagef("%v", err)
			}
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		b["keys"] = keys
	}
	if c.generation >= 0 {
		b["consumer_generation"] = c.generation
	}
	if c.alternates >= 0 {
		b["alternates"] = c.alternates
	}
	if c.maxAttempts != 0 {
		b["max_attempts"] = c.maxAttempts
	}
	if c.lease != 0 {
		secs, err := leaseSeconds(c.lease)
		if err != nil {
			return nil, err
		}
		b["lease_seconds"] = secs
	}
	return b, nil
}

// leaseSeconds is d as the API's lease_seconds: whole seconds, at least
// one (the server checks its maximum).
func leaseSeconds(d time.Duration) (int64, error) {
	if d < time.Second || d%time.Second != 0 {
		return 0, usagef("--lease %v: want whole seconds, at least 1s (e.g. 30s, 10m)", d)
	}
	return int64(d / time.Second), nil
}

// claimAnswer is the 200 body of POST /claims (and reschedule, move).
type claimAnswer struct {
	ConsumerUUID       string                `json:"consumer_uuid"`
	ConsumerGeneration *int64                `json:"consumer_generation"`
	Allocations        map[string]allocation `json:"allocations"`
	RootUUID           string                `json:"root_provider_uuid"`
	RootName           string                `json:"root_provider_name"`
	Score              *float64              `json:"score"`
	Alternates         []struct {
		RootUUID string   `json:"root_provider_uuid"`
		RootName string   `json:"root_provider_name"`
		Score    *float64 `json:"score"`
	} `json:"alternates"`
	Attempts  int       `json:"attempts"`
	DryRun    bool      `json:"dry_run"`
	Steps     []step    `json:"steps"`
	Ranking   []rank    `json:"ranking"`
	Log       []logLine `json:"scriptlet_log"`
	Migration *struct {
		ConsumerUUID string                `json:"consumer_uuid"`
		Allocations  map[string]allocation `json:"allocations"`
	} `json:"migration"`
	// Quota is a dry run's quota check (docs/quotas.md).
	Quota *struct {
		Fits      bool   `json:"fits"`
		ProjectID string `json:"project_id"`
		Resources map[string]struct {
			Limit, Requested, Used int64
		} `json:"resources"`
	} `json:"quota"`
	Reused *struct {
		From   string   `json:"from"`
		Fields []string `json:"fields"`
	} `json:"reused"`
}

type allocation struct {
	Resources map[string]int64 `json:"resources"`
}

type step struct {
	Unit      string         `json:"unit"`
	Kind      string         `json:"kind"`
	Removed   int            `json:"removed"`
	Remaining int            `json:"remaining"`
	Reasons   map[string]int `json:"reasons"`
}

type rank struct {
	Rank     int                `json:"rank"`
	RootUUID string             `json:"root_provider_uuid"`
	RootName string             `json:"root_provider_name"`
	Score    float64            `json:"score"`
	Weights  map[string]float64 `json:"weights"`
}

type logLine struct {
	Level   string `json:"level"`
	Message string `json:"message"`
}

// Error codes berth explains further.
const (
	CodeNoValidHost      = "berth.no_valid_host"         // nothing fits
	CodeConcurrentUpdate = "placement.concurrent_update" // a consumer or provider generation moved
)

func claimCommands() []*command {
	return []*command{
		{
			name:    "explain",
			args:    "--resources CLASS:N,... [selection flags]",
			summary: "Dry-run a claim: per-step removals, the ranking with per-unit scores, the scriptlet's log",
			help: `POSTs /claims with dry_run true: the server runs candidate generation, every
filter, weigher and scriptlet of the policy, and writes nothing. --project
and --user default to "berth-explain" (scriptlets may look at them).
When nothing fits, the refusal says per step how many candidates were
removed and why, and last the scriptlet's reason if it refused what the
steps left; berth prints it one step per line and exits 1.`,
			example: `berth explain --resources VCPU:4,MEMORY_MB:16384 --policy spread --name web-1 \
    --property group=web --exclude cn7`,
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				var c claimFlags
				c.register(fs, true)
				top := fs.Int("top", 10, "`N` ranking rows to show (0: all)")
				return func(e *env, args []string) error {
					if err := argsN(args); err != nil {
						return err
					}
					b, err := c.body(true, false)
					if err != nil {
						return err
					}
					b["dry_run"] = true
					return postClaim(e, "/claims", b, *top)
				}
			},
		},
		{
			name:    "claim",
			args:    "--resources CLASS:N,... --project P --user U [selection flags] [--lease D]",
			summary: "Select and claim in one atomic step (POST /claims)",
			help: `With --lease the claim is provisional: it counts against capacity like any
allocation, and its allocations are released when the lease runs out unless
the claim is confirmed first ("berth claim confirm CONSUMER", or any write of
its allocations through the Placement API, as a compute agent makes) or
renewed ("berth claim renew CONSUMER --lease D"). "berth claim show CONSUMER"
shows a claim's request, where it landed and its state.`,
			example: `berth claim --resources VCPU:2,MEMORY_MB:4096 --project demo --user alice --name web-1 --lease 5m`,
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				var c claimFlags
				c.register(fs, true)
				dry := fs.Bool("dry-run", false, "write nothing (as berth explain)")
				return func(e *env, args []string) error {
					if err := argsN(args); err != nil {
						return err
					}
					b, err := c.body(true, !*dry)
					if err != nil {
						return err
					}
					if *dry {
						b["dry_run"] = true
					}
					return postClaim(e, "/claims", b, 10)
				}
			},
		},
		claimShowCommand(),
		claimLeaseCommand("claim renew", "CONSUMER --lease D", "Renew a provisional claim's lease: released D from now unless confirmed",
			"berth claim renew 5b0d3c52-8f1e-4a8e-9a55-3a2f0c1d9e77 --lease 5m", true),
		claimLeaseCommand("claim confirm", "CONSUMER", "Confirm a provisional claim: its allocations become permanent (no lease)",
			"berth claim confirm 5b0d3c52-8f1e-4a8e-9a55-3a2f0c1d9e77", false),
		{
			name:    "reschedule",
			args:    "CONSUMER [--failed PROVIDER] [selection flags]",
			summary: "Drop a consumer's allocations and claim elsewhere, avoiding where it failed (atomic)",
			example: `berth reschedule 5b0d3c52-8f1e-4a8e-9a55-3a2f0c1d9e77 --failed cn3`,
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				var c claimFlags
				c.register(fs, false)
				failed := fs.String("failed", "", "the root `PROVIDER` it failed on, uuid or name (default: where it is now)")
				return func(e *env, args []string) error {
					if err := argsN(args, "CONSUMER"); err != nil {
						return err
					}
					b, err := c.existingBody()
					if err != nil {
						return err
					}
					if *failed != "" {
						b["failed_provider"] = *failed
					}
					return postClaim(e, "/claims/"+args[0]+"/reschedule", b, 10)
				}
			},
		},
		{
			name:    "move",
			args:    "CONSUMER --migration UUID [--target P] [selection flags]",
			summary: "Move a consumer: its source allocations go to the migration consumer, the destination is claimed (atomic)",
			help: `Then "berth move-confirm CONSUMER" drops the source, or "berth move-revert
CONSUMER" gives the source back and drops the destination.`,
			example: `berth move 5b0d3c52-8f1e-4a8e-9a55-3a2f0c1d9e77 --migration $(uuidgen) --target cn4`,
			setup: func(fs *flag.FlagSet) func(*env, []string) error {
				var c claimFlags
				c.register(fs, false)
				migration := fs.String("migration", "", "the migration consumer's `UUID` (required; a new random one with --migration new)")
				return func(e *env, args []string) error {
					if err := argsN(args, "CONSUMER"); err != nil {
						return err
					}
					if *migration == "" {
						return usagef("--migration is required (a uuid, or \"new\")")
					}
					if *migration == "new" {
						*migration = uuid.New()
					}
					b, err := c.existingBody()
					if err != nil {
						return err
					}
					b["migration_uuid"] = *migration
					return postClaim(e, "/claims/"+args[0]+"/move", b, 10)
				}
			},
		},
		moveEndCommand("move-confirm", "confirm", "Finish a move: drop the migration's (source) allocations"),
		moveEndCommand("move-revert", "revert", "Undo a move: drop the destination, give the source back to the consumer"),
	}
}

// existingBody builds the request of a command on an existing consumer
// (reschedule, move): the consumer is in the path, not the body, and the
// project and user, when the flags give none, come from the consumer.
func (c *claimFlags) existingBody() (map[string]any, error) {
	b, err := c.body(false, false)
	if err != nil {
		return nil, err
	}
	delete(b, "consumer_uuid")
	if c.project == "" {
		delete(b, "project_id")
	}
	if c.user == "" {
		delete(b, "user_id")
	}
	return b, nil
}

func moveEndCommand(name, op, summary string) *command {
	return &command{
		name:    name,
		args:    "CONSUMER [--migration UUID]",
		summary: summary,
		example: "berth " + name + " 5b0d3c52-8f1e-4a8e-9a55-3a2f0c1d9e77",
		setup: func(fs *flag.FlagSet) func(*env, []string) error {
			migration := fs.String("migration", "", "the migration consumer's `UUID` (optional when Berth remembers the move)")
			return func(e *env, args []string) error {
				if err := argsN(args, "CONSUMER"); err != nil {
					return err
				}
				b := map[string]any{}
				if *migration != "" {
					b["migration_uuid"] = *migration
				}
				var ans claimAnswer
				raw, err := e.client.JSON(e.ctx, "POST", "/claims/"+args[0]+"/move/"+op, b, &ans)
				if err != nil {
					return err
				}
				if e.json() {
					return e.printJSON(raw)
				}
				fmt.Fprintf(e.io.Stdout, "Move %sed: consumer %s, generation %s.\n\n", strings.TrimSuffix(op, "e"), ans.ConsumerUUID, gen(ans.ConsumerGeneration))
				return renderAllocations(e.io.Stdout, ans.Allocations, nil)
			}
		},
	}
}

// postClaim sends a claim body and renders the answer; a no-valid-host
// refusal is printed one step per line.
func postClaim(e *env, path string, body map[string]any, top int) error {
	var ans claimAnswer
	raw, err := e.client.JSON(e.ctx, "POST", path, body, &ans)
	if err != nil {
		return noValidHost(e, err)
	}
	if e.json() {
		return e.printJSON(raw)
	}
	return renderClaim(e.io.Stdout, &ans, top)
}

// noValidHost prints a berth.no_valid_host refusal readably (its detail
// lists each step's removals, separated by "; ", and last the scriptlet's
// refusal, if it refused) and returns exit status 1.
func noValidHost(e *env, err error) error {
	var ae *client.Error
	if errors.As(err, &ae) && ae.Code() == CodeConcurrentUpdate {
		return fmt.Errorf("%w\n(the consumer exists, or changed meanwhile: give its current generation with --consumer-generation N to replace its allocations)", err)
	}
	if !errors.As(err, &ae) || ae.Code() != CodeNoValidHost {
		return err
	}
	if e.json() {
		return nothingFound{err}
	}
	item := ae.Items()[0]
	if item.Refusal != "" {
		fmt.Fprintln(e.io.Stderr, "No valid host: the scriptlet refused.")
	} else {
		fmt.Fprintln(e.io.Stderr, "No valid host: nothing fits.")
	}
	for _, part := range strings.Split(client.Detail(item.Detail), "; ") {
		fmt.Fprintf(e.io.Stderr, "  %s\n", Printable(part))
	}
	return errNothing
}

func gen(g *int64) string {
	if g == nil {
		return "-"
	}
	return strconv.FormatInt(*g, 10)
}

func score(s *float64) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *s)
}

// renderClaim prints a claim answer: the outcome, the allocations, the
// alternates, and for a dry run the quota check, the steps, the ranking
// (top rows, 0: all) and the scriptlet log.
func renderClaim(w io.Writer, a *claimAnswer, top int) error {
	where := a.RootName
	if where == "" {
		where = a.RootUUID
	} else {
		where += " (" + a.RootUUID + ")"
	}
	attempts := ""
	if a.Attempts > 0 {
		attempts = fmt.Sprintf(", %d attempt%s", a.Attempts, plural(a.Attempts))
	}
	if a.DryRun {
		fmt.Fprintf(w, "Dry run, nothing written: would claim on %s, score %s.\n", where, score(a.Score))
	} else {
		fmt.Fprintf(w, "Claimed on %s for consumer %s (generation %s), score %s%s.\n",
			where, a.ConsumerUUID, gen(a.ConsumerGeneration), score(a.Score), attempts)
	}
	if r := a.Reused; r != nil {
		fields := strings.Join(r.Fields, ", ")
		if fields == "" {
			fields = "nothing"
		}
		switch r.From {
		case "claim":
			fmt.Fprintf(w, "Reused from the consumer's stored claim: %s.\n", fields)
		default:
			fmt.Fprintf(w, "No stored claim (allocations written through the Placement API); reused from its allocations: %s.\n", fields)
		}
	}
	names := map[string]string{a.RootUUID: a.RootName}
	for _, r := range a.Ranking {
		names[r.RootUUID] = r.RootName
	}
	fmt.Fprintln(w)
	if err := renderAllocations(w, a.Allocations, names); err != nil {
		return err
	}
	if a.Migration != nil {
		fmt.Fprintf(w, "\nSource allocations now held by migration %s:\n", a.Migration.ConsumerUUID)
		renderAllocations(w, a.Migration.Allocations, names)
	}
	if len(a.Alternates) > 0 {
		var alts []string
		for _, alt := range a.Alternates {
			n := alt.RootName
			if n == "" {
				n = alt.RootUUID
			}
			alts = append(alts, fmt.Sprintf("%s (%s)", n, score(alt.Score)))
		}
		fmt.Fprintf(w, "\nAlternates: %s\n", strings.Join(alts, ", "))
	}
	if q := a.Quota; q != nil && len(q.Resources) > 0 {
		verdict := "within"
		if !q.Fits {
			verdict = "over"
		}
		fmt.Fprintf(w, "\nQuota of project %s: the claim is %s its limits.\n", q.ProjectID, verdict)
		t := NewTable("RESOURCE", "REQUESTED", "USED", "LIMIT").AlignRight(1, 2, 3)
		for _, r := range sortedKeys(q.Resources) {
			v := q.Resources[r]
			t.Row(r, strconv.FormatInt(v.Requested, 10), strconv.FormatInt(v.Used, 10), strconv.FormatInt(v.Limit, 10))
		}
		t.Render(w)
	}
	if len(a.Steps) > 0 {
		fmt.Fprintln(w, "\nSteps:")
		t := NewTable("UNIT", "KIND", "REMOVED", "REMAINING", "REASONS").AlignRight(2, 3)
		for _, s := range a.Steps {
			t.Row(s.Unit, s.Kind, strconv.Itoa(s.Removed), strconv.Itoa(s.Remaining), reasons(s.Reasons))
		}
		t.Render(w)
	}
	if len(a.Ranking) > 0 {
		fmt.Fprintln(w, "\nRanking:")
		renderRanking(w, a.Ranking, top)
	}
	if len(a.Log) > 0 {
		fmt.Fprintln(w, "\nScriptlet log:")
		for _, l := range a.Log {
			fmt.Fprintf(w, "  %-5s %s\n", l.Level, l.Message)
		}
	}
	return nil
}

func renderRanking(w io.Writer, ranking []rank, top int) {
	units := map[string]bool{}
	for _, r := range ranking {
		for u := range r.Weights {
			units[u] = true
		}
	}
	cols := sortedKeys(units)
	header := append([]string{"RANK", "PROVIDER", "SCORE"}, cols...)
	t := NewTable(header...)
	right := []int{0, 2}
	for i := range cols {
		right = append(right, 3+i)
	}
	t.AlignRight(right...)
	for i, r := range ranking {
		if top > 0 && i == top {
			t.Line(fmt.Sprintf("... %d more (--top 0 shows all)", len(ranking)-top))
			break
		}
		name := r.RootName
		if name == "" {
			name = r.RootUUID
		}
		cells := []string{strconv.Itoa(r.Rank), name, fmt.Sprintf("%.3f", r.Score)}
		for _, u := range cols {
			if v, ok := r.Weights[u]; ok {
				cells = append(cells, fmt.Sprintf("%.3f", v))
			} else {
				cells = append(cells, "-")
			}
		}
		t.Row(cells...)
	}
	t.Render(w)
}

// reasons prints a step's reasons, most frequent first: "lacked VCPU: 3, ...".
func reasons(m map[string]int) string {
	keys := sortedKeys(m)
	sort.SliceStable(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// renderAllocations prints one row per provider and class; names maps
// provider uuids to names where known.
func renderAllocations(w io.Writer, allocs map[string]allocation, names map[string]string) error {
	if len(allocs) == 0 {
		fmt.Fprintln(w, "No allocations.")
		return nil
	}
	t := NewTable("PROVIDER", "CLASS", "AMOUNT").AlignRight(2)
	for _, rp := range sortedKeys(allocs) {
		label := rp
		if n := names[rp]; n != "" {
			label = n + " (" + rp + ")"
		}
		for _, c := range sortedKeys(allocs[rp].Resources) {
			t.Row(label, c, strconv.FormatInt(allocs[rp].Resources[c], 10))
			label = ""
		}
	}
	return t.Render(w)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
