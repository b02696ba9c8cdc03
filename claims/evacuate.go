package claims

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/uuid"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/resources"
	"github.com/berthd/berth/ledger/scheduling"
)

// Evacuating a host, as LXD's cluster evacuate, oVirt's maintenance mode
// or a compute node marked down in Nova: the root provider is marked
// evacuated (claims avoid it from then on) and every consumer it holds
// is moved away with reason evacuation, each move the usual Move (the
// source held by a migration consumer until confirmed), several at once.
// A second call resumes what is left; Restore makes the provider a
// candidate again.

// Bounds of EvacuateParams.Parallel.
const (
	DefaultEvacuateParallel = 4
	MaxEvacuateParallel     = 32
)

// EvacuateParams is one call of Evacuate.
type EvacuateParams struct {
	// Provider is the root provider's uuid.
	Provider string
	// DryRun plans each move without writing anything (not even the
	// mark): each destination is chosen as if the other moves had not
	// happened.
	DryRun bool
	// Confirm confirms each move at once, dropping the source's
	// allocations (a host that is gone), and confirms the moves earlier
	// evacuations of the provider made and left unconfirmed (reported
	// EvacuationConfirmed); otherwise they stay held by the migration
	// consumer until POST /claims/{uuid}/move/confirm.
	Confirm bool
	// Parallel is how many moves run at once: 0 means
	// DefaultEvacuateParallel, at most MaxEvacuateParallel.
	Parallel int
	// Limit, when positive, is how many consumers this call moves (in
	// uuid order, after After); the answer's Next resumes.
	Limit int
	// After, when set, skips the consumers whose uuid is not greater.
	After string
	// Policy names the scheduling policy of the moves ("" the one of
	// each consumer's request).
	Policy string
	// Mode is LXD's and Incus's evacuation mode: EvacuateAuto ("" means
	// it) moves each consumer unless its instance says otherwise
	// (config "cluster.evacuate" "stop" or "force-stop"); EvacuateMigrate
	// moves every one; EvacuateStop moves none (the host is marked, the
	// consumers stay and are reported skipped).
	Mode string
	// MoveRequest, when set, makes the request of one consumer's move
	// (migrationUUID its migration consumer): httpapi redoes the
	// consumer's stored claim, as POST /claims/{uuid}/move does with a
	// body of only the evacuation's fields, so that the move keeps the
	// claim's selection (traits, aggregates, groups), its instance and
	// its policy, and stores that request again. Its error fails that
	// consumer's move. Nil: the consumer's allocations, as for a
	// consumer no claim placed. Evacuate sets the reason, the dry run
	// and, when given, Policy over what it returns.
	MoveRequest func(ctx context.Context, consumerUUID, migrationUUID string) (Params, error)
}

// Evacuation modes (EvacuateParams.Mode), as LXD's and Incus's.
const (
	EvacuateAuto    = "auto"
	EvacuateMigrate = "migrate"
	EvacuateStop    = "stop"
)

// EvacuateModes lists the valid modes. "live-migrate" is Incus's for a
// running instance; Berth moves allocations, not running instances, so
// it is EvacuateMigrate.
var EvacuateModes = []string{EvacuateAuto, EvacuateMigrate, "live-migrate", EvacuateStop}

// instanceEvacuateKey is the instance config key with which LXD and
// Incus let one instance say how it is evacuated.
const instanceEvacuateKey = "cluster.evacuate"

// Statuses of an EvacuatedConsumer.
const (
	EvacuationMoved   = "moved"
	EvacuationPlanned = "planned" // a dry run's
	EvacuationFailed  = "failed"
	EvacuationSkipped = "skipped"
	// EvacuationConfirmed is an earlier evacuation's move, confirmed
	// by this one (EvacuateParams.Confirm).
	EvacuationConfirmed = "confirmed"
)

// Reasons of a failed or skipped EvacuatedConsumer.
const (
	EvacuationNoValidHost   = "no_valid_host"    // nothing fits
	EvacuationRefused       = "refused"          // the scriptlet refused
	EvacuationMoveInProcess = "move_in_progress" // its earlier move is not confirmed or reverted
	EvacuationMigration     = "migration"        // a migration consumer: the source of a move in progress
	EvacuationError         = "error"            // another refusal or an outage
	EvacuationStop          = "stop"             // its instance (or the mode) says stop, not move
)

// EvacuatedConsumer is what happened to one consumer of the provider.
type EvacuatedConsumer struct {
	ConsumerUUID string
	Name         string
	Status       string
	// Destination and DestinationName are where it was moved (or would
	// be); MigrationUUID the consumer holding the source until
	// confirmed; Confirmed whether it was.
	Destination, DestinationName string
	MigrationUUID                string
	Confirmed                    bool
	// Reason and Detail say why a consumer was not moved.
	Reason, Detail string
}

// Evacuation is the answer of Evacuate.
type Evacuation struct {
	Provider scheduling.ProviderEvacuation
	DryRun   bool
	// Consumers are those this call looked at, by uuid.
	Consumers []EvacuatedConsumer
	// Remaining counts the consumers still on the provider that an
	// evacuation would move (not the migration consumers, nor those in a
	// move in progress): those that failed, and those after Next. The
	// migration consumers of the provider's evacuations are neither
	// listed nor counted: they hold the sources of its moves.
	Remaining int
	// Pending counts those after Next: not looked at by this call.
	Pending int
	// Next, when set, is the uuid to give as After to go on (Limit cut
	// the list).
	Next string
}

// Evacuate marks p.Provider evacuated (unless a dry run) and moves the
// consumers it holds, p.Parallel at a time, with reason evacuation: each
// is a Move whose destination the policy and its scriptlet choose
// (candidate members never include the provider). A consumer that cannot
// be moved (nothing fits, the scriptlet refused) stays and is reported;
// so are the migration consumers of other moves and consumers whose
// earlier move is in progress. The migration consumers of the provider's
// own evacuation moves are not reported, unless p.Confirm confirms those
// moves. Each consumer is reported by the one page (After, Limit) its
// uuid falls in, so the counts do not depend on the page size. An
// unknown provider is ErrNotFound; one that is not a root, or bad
// parameters, ErrInvalid; nothing is written then.
func (c *Claimer) Evacuate(ctx context.Context, p EvacuateParams) (*Evacuation, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	var mark scheduling.ProviderEvacuation
	var err error
	if p.DryRun {
		mark, err = c.store.Cloud.ProviderEvacuationGet(ctx, p.Provider)
	} else {
		mark, err = c.store.Cloud.ProviderEvacuate(ctx, p.Provider)
	}
	if err != nil {
		return nil, err
	}
	out := &Evacuation{Provider: mark, DryRun: p.DryRun}
	todo, err := c.evacuees(ctx, &p, mark, out)
	if err != nil {
		return nil, err
	}
	moved := c.moveAll(ctx, &p, mark, todo.move)
	out.Consumers = append(out.Consumers, moved...)
	out.Consumers = append(out.Consumers, confirmAll(ctx, c.Confirm, todo.confirm)...)
	slices.SortFunc(out.Consumers, func(a, b EvacuatedConsumer) int { return strings.Compare(a.ConsumerUUID, b.ConsumerUUID) })
	for _, m := range moved {
		if m.Status != EvacuationMoved {
			out.Remaining++
		}
	}
	return out, nil
}

// check validates p and fills its defaults.
func (p *EvacuateParams) check() error {
	if p.Parallel == 0 {
		p.Parallel = DefaultEvacuateParallel
	}
	if p.Parallel < 1 || p.Parallel > MaxEvacuateParallel {
		return invalid("Invalid parallel %d: want 1 to %d", p.Parallel, MaxEvacuateParallel)
	}
	if p.Limit < 0 {
		return invalid("Invalid limit %d: want 0 (all) or more", p.Limit)
	}
	switch p.Mode {
	case "":
		p.Mode = EvacuateAuto
	case "live-migrate":
		p.Mode = EvacuateMigrate
	}
	if !slices.Contains(EvacuateModes, p.Mode) {
		return invalid("Invalid mode %q: want one of %s", p.Mode, strings.Join(EvacuateModes, ", "))
	}
	if p.After != "" {
		after, ok := uuid.Canonical(p.After)
		if !ok {
			return invalid("Invalid after %q: want a consumer uuid", p.After)
		}
		p.After = after
	}
	return nil
}

// evacuee is a consumer to move.
type evacuee struct {
	uuid, name string
}

// evacuations is what one call of Evacuate does: the consumers to move
// and the earlier evacuation moves to confirm.
type evacuations struct {
	move    []evacuee
	confirm []claimrecords.MoveRecord
}

// evacuees lists the consumers on mark's tree in uuid order, those after
// p.After up to the page's end (the last one to move when p.Limit cuts
// the list): it records in out those that are skipped, and counts in
// out.Remaining those after the limit; it returns those to move now and,
// when p.Confirm, the evacuation moves to confirm. A migration consumer
// of an evacuation move away from the provider is the evacuation's own:
// not reported.
func (c *Claimer) evacuees(ctx context.Context, p *EvacuateParams, mark scheduling.ProviderEvacuation, out *Evacuation) (evacuations, error) {
	var todo evacuations
	ins, err := c.store.Cloud.Instances(ctx, scheduling.InstancesParams{Location: mark.ProviderUUID, Documents: true})
	if err != nil {
		return todo, err
	}
	moves, err := c.store.Claims.ClaimMovesFrom(ctx, mark.ProviderUUID)
	if err != nil {
		return todo, err
	}
	own := map[string]claimrecords.MoveRecord{}
	for _, m := range moves {
		if m.Reason == ReasonEvacuation {
			own[m.MigrationUUID] = m
		}
	}
	// Skipped consumers and moves to confirm, each the page's whose
	// range holds its instance's uuid.
	type held struct {
		uuid    string
		skipped EvacuatedConsumer
		confirm *claimrecords.MoveRecord
	}
	var others []held
	for _, in := range ins {
		if in.UUID <= p.After && p.After != "" {
			continue
		}
		if m, ok := own[in.UUID]; ok && in.Type == resources.MigrationConsumerType {
			if p.Confirm && !p.DryRun {
				others = append(others, held{uuid: in.UUID, confirm: &m})
			}
			continue
		}
		skip := func(r EvacuatedConsumer) { others = append(others, held{uuid: in.UUID, skipped: r}) }
		if in.Type == resources.MigrationConsumerType {
			skip(EvacuatedConsumer{ConsumerUUID: in.UUID, Name: in.Name, Status: EvacuationSkipped,
				Reason: EvacuationMigration, Detail: "holds the source of a move in progress; confirm or revert that move"})
			continue
		}
		mv, err := c.store.Claims.ClaimMoveGet(ctx, in.UUID)
		if err != nil {
			return todo, err
		}
		if mv != nil {
			skip(EvacuatedConsumer{ConsumerUUID: in.UUID, Name: in.Name, Status: EvacuationSkipped,
				Reason: EvacuationMoveInProcess, MigrationUUID: mv.MigrationUUID,
				Detail: "its move (migration " + mv.MigrationUUID + ") is in progress; confirm or revert it first"})
			continue
		}
		if why := stays(p.Mode, in.Document); why != "" {
			skip(EvacuatedConsumer{ConsumerUUID: in.UUID, Name: in.Name, Status: EvacuationSkipped,
				Reason: EvacuationStop, Detail: why})
			continue
		}
		if p.Limit > 0 && len(todo.move) == p.Limit {
			out.Remaining++
			out.Pending++
			out.Next = todo.move[len(todo.move)-1].uuid
			continue
		}
		todo.move = append(todo.move, evacuee{uuid: in.UUID, name: in.Name})
	}
	// What lies after the page's end is the next page's.
	for _, h := range others {
		switch {
		case out.Next != "" && h.uuid > out.Next:
			return todo, nil
		case h.confirm != nil:
			todo.confirm = append(todo.confirm, *h.confirm)
		default:
			out.Consumers = append(out.Consumers, h.skipped)
		}
	}
	return todo, nil
}

// stays says why a consumer whose stored claim's instance is doc is not
// moved under mode, "" when it is: LXD and Incus stop such an instance
// in place; Berth leaves its allocations on the host.
func stays(mode string, doc []byte) string {
	switch mode {
	case EvacuateStop:
		return `the evacuation's mode is "stop": it stays on the host`
	case EvacuateMigrate:
		return ""
	}
	var inst struct {
		Config map[string]any `json:"config"`
	}
	if len(doc) == 0 || json.Unmarshal(doc, &inst) != nil {
		return ""
	}
	if v, _ := inst.Config[instanceEvacuateKey].(string); v == "stop" || v == "force-stop" {
		return `its instance's cluster.evacuate is "` + v + `": it stays on the host (LXD and Incus stop it there)`
	}
	return ""
}

// evacuationNamespace names the migration consumers of evacuations.
var evacuationNamespace = [16]byte{0x6c, 0x78, 0x64, 0x2d, 0x65, 0x76, 0x61, 0x63, 0x75, 0x61, 0x74, 0x65, 0x00, 0x00, 0x00, 0x01}

// moveAll moves todo, p.Parallel at a time, and says what happened to
// each, in todo's order. A cancelled ctx stops the moves not started.
func (c *Claimer) moveAll(ctx context.Context, p *EvacuateParams, mark scheduling.ProviderEvacuation, todo []evacuee) []EvacuatedConsumer {
	out := make([]EvacuatedConsumer, len(todo))
	sem := make(chan struct{}, p.Parallel)
	var wg sync.WaitGroup
	for i, e := range todo {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			out[i] = EvacuatedConsumer{ConsumerUUID: e.uuid, Name: e.name, Status: EvacuationFailed, Reason: EvacuationError,
				Detail: "not attempted: " + ctx.Err().Error()}
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = c.evacuateOne(ctx, p, mark, e)
		}()
	}
	wg.Wait()
	return out
}

// evacuateOne moves one consumer away with reason evacuation, and
// confirms the move when p asks. Its migration consumer's uuid is
// derived from the provider, the consumer and the time of the mark, so a
// retry of the same evacuation is the same Move.
func (c *Claimer) evacuateOne(ctx context.Context, p *EvacuateParams, mark scheduling.ProviderEvacuation, e evacuee) EvacuatedConsumer {
	r := EvacuatedConsumer{ConsumerUUID: e.uuid, Name: e.name}
	r.MigrationUUID = uuid.FromName(evacuationNamespace, mark.ProviderUUID+" "+e.uuid+" "+mark.At.String())
	mp, err := p.moveRequest(ctx, e, r.MigrationUUID)
	var res *Result
	if err == nil {
		res, err = c.Move(ctx, mp, r.MigrationUUID)
	}
	if err != nil {
		r.Status, r.MigrationUUID = EvacuationFailed, ""
		r.Reason, r.Detail = evacuationFailure(err)
		return r
	}
	r.Status, r.Destination, r.DestinationName = EvacuationMoved, res.Root, res.RootName
	if p.DryRun {
		r.Status, r.MigrationUUID = EvacuationPlanned, ""
		return r
	}
	if p.Confirm {
		if _, err := c.Confirm(ctx, e.uuid, r.MigrationUUID); err != nil {
			r.Reason, r.Detail = EvacuationError, "moved, but the confirm failed: "+err.Error()
			return r
		}
		r.Confirmed = true
	}
	return r
}

// confirmAll confirms the earlier evacuation moves ms with confirm (the
// Claimer's), one at a time (a confirm is one short write), and says what
// happened to each: confirmed, or failed with the refusal.
func confirmAll(ctx context.Context, confirm func(ctx context.Context, consumerUUID, migrationUUID string) (*Holding, error),
	ms []claimrecords.MoveRecord) []EvacuatedConsumer {
	out := make([]EvacuatedConsumer, len(ms))
	for i, m := range ms {
		r := EvacuatedConsumer{ConsumerUUID: m.ConsumerUUID, MigrationUUID: m.MigrationUUID, Status: EvacuationConfirmed, Confirmed: true}
		if _, err := confirm(ctx, m.ConsumerUUID, m.MigrationUUID); err != nil {
			r.Status, r.Confirmed = EvacuationFailed, false
			r.Reason, r.Detail = evacuationFailure(err)
			r.Detail = "moved earlier, but the confirm failed: " + r.Detail
		}
		out[i] = r
	}
	return out
}

// moveRequest is the request of e's move (see MoveRequest).
func (p *EvacuateParams) moveRequest(ctx context.Context, e evacuee, migrationUUID string) (Params, error) {
	mp := Params{ConsumerUUID: e.uuid}
	if p.MoveRequest != nil {
		var err error
		if mp, err = p.MoveRequest(ctx, e.uuid, migrationUUID); err != nil {
			return mp, err
		}
	}
	if mp.Name == "" {
		mp.Name = e.name
	}
	mp.Reason, mp.DryRun = ReasonEvacuation, p.DryRun
	if p.Policy != "" {
		mp.Policy = p.Policy
	}
	return mp, nil
}

// evacuationFailure words why a move failed. A scriptlet's refusal of a
// move that had no candidate left (it is handed an empty list, as for
// any claim) is "nothing fits", the refusal in the detail.
func evacuationFailure(err error) (reason, detail string) {
	var np *NotPlacedError
	if errors.As(err, &np) {
		if np.Reason == Refused && !nothingLeft(np.Steps) {
			return EvacuationRefused, np.Error()
		}
		return EvacuationNoValidHost, np.Error()
	}
	var fe *fault.Error
	if errors.As(err, &fe) {
		return EvacuationError, fe.Msg
	}
	return EvacuationError, err.Error()
}

// nothingLeft reports whether the steps left no candidate.
func nothingLeft(steps []Step) bool {
	return len(steps) > 0 && steps[len(steps)-1].Remaining == 0
}

// Restore makes an evacuated root provider a candidate again. Its
// consumers stay where the evacuation moved them. ErrNotFound for an
// unknown provider, ErrInvalid for one that is not a root, ErrConflict
// for one that is not evacuated.
func (c *Claimer) Restore(ctx context.Context, provider string) (scheduling.ProviderEvacuation, error) {
	return c.store.Cloud.ProviderRestore(ctx, provider)
}
