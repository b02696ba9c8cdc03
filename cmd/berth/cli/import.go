package cli

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/berthd/berth/internal/placementdiff"
	"github.com/berthd/berth/ledger/placementdb"
)

// maxListed bounds the rows a refusal lists.
const maxListed = 50

func importCommands() []*command {
	return []*command{importPlacementCommand(), exportPlacementCommand()}
}

func importPlacementCommand() *command {
	return &command{
		name:    "import placement",
		args:    "--source URL --database-url URL [--replace] [--skip-orphans] | --verify --source-api URL",
		summary: "Copy an OpenStack Placement database into Berth's, or compare the two APIs after",
		help: `Reads Placement 8.0.0's schema (alembic revision 422ece571366) from MySQL,
MariaDB or PostgreSQL and writes Berth's database in one transaction:
providers (uuids, names, trees, generations), inventories, classes, traits,
aggregates, projects, users, consumer types, consumers (generations
included) and allocations, with their timestamps. The Berth database is
migrated first; it must hold no providers, consumers, aggregates or custom
classes and traits unless --replace. Every refusal (unreachable source,
wrong password, another schema version, names Berth would refuse, a
non-empty target) is one line, with nothing written.

--source takes placement.conf's [placement_database] connection as is:
mysql+pymysql://user:password@host:port/placement?charset=utf8, mysql://,
postgresql+psycopg2://, postgresql://. Passwords are never printed.

Placement's allocations table has no foreign keys, so allocations (and
inventories, aggregate links) pointing at a missing consumer, provider or
class exist in real databases. Import lists them and refuses; with
--skip-orphans it imports without them and lists them.

--verify (with --source-api, and --url or --berth-api for Berth) writes
nothing: it sends every read a client makes to both APIs and prints each
answer that differs. Exit status 0 only when none does.`,
		example: `berth import placement --source 'mysql+pymysql://placement:secret@db1/placement?charset=utf8' \
    --database-url postgres://berth@db2/berth
berth import placement --verify --source-api http://placement:8778 --berth-api http://berth:8778`,
		setup: func(fs *flag.FlagSet) func(*env, []string) error {
			source := fs.String("source", "", "Placement database `URL` (placement.conf's connection)")
			dbURL := fs.String("database-url", "", "Berth's database `URL`; env BERTH_DATABASE_URL")
			replace := fs.Bool("replace", false, "discard the Berth database's providers, consumers and allocations instead of refusing")
			skip := fs.Bool("skip-orphans", false, "import without the rows that point at nothing, listing them")
			verify := fs.Bool("verify", false, "compare the Placement API at --source-api with Berth's, read by read; write nothing")
			sourceAPI := fs.String("source-api", "", "Placement API `URL` (with --verify)")
			sourceToken := fs.String("source-token", "", "X-Auth-Token for --source-api (default: --token)")
			berthAPI := fs.String("berth-api", "", "Berth API `URL` (with --verify; default: --url)")
			sample := fs.Int("sample", 0, "with --verify, read the answers of `N` providers picked at random (and their consumers) instead of all")
			workers := fs.Int("workers", 4, "`N` requests in flight per API (with --verify; at most the Placement API's processes)")
			return func(e *env, args []string) error {
				if err := argsN(args); err != nil {
					return err
				}
				if *verify {
					if *sourceAPI == "" {
						return usagef("--verify needs --source-api")
					}
					return runVerify(e, *sourceAPI, firstNonEmpty(*sourceToken, e.g.token), firstNonEmpty(*berthAPI, e.g.url), *workers, *sample)
				}
				if *source == "" {
					return usagef("--source is required (or --verify)")
				}
				target := firstNonEmpty(*dbURL, e.io.Getenv("BERTH_DATABASE_URL"))
				if target == "" {
					return usagef("--database-url (or BERTH_DATABASE_URL) is required")
				}
				return runImport(e, *source, target, placementdb.ImportParams{Replace: *replace}, *skip)
			}
		},
	}
}

func runImport(e *env, source, target string, p placementdb.ImportParams, skipOrphans bool) error {
	src, err := placementdb.ParseURL(source)
	if err != nil {
		return err
	}
	start := time.Now()
	d, orphans, err := placementdb.ReadPlacement(e.ctx, src)
	if err != nil {
		return rowsError(e, err)
	}
	read := time.Since(start)
	if len(orphans) > 0 && !skipOrphans {
		listRows(e, orphans)
		return fmt.Errorf("%s holds %d orphaned rows (listed above; Placement's allocations have no foreign keys); nothing written: fix them, or pass --skip-orphans to import without them", src, len(orphans))
	}
	if err := placementdb.WriteBerth(e.ctx, target, d, p); err != nil {
		return rowsError(e, err)
	}
	if len(orphans) > 0 {
		listRows(e, orphans)
		fmt.Fprintf(e.io.Stderr, "berth import placement: %d orphaned rows (listed above) not imported\n", len(orphans))
	}
	fmt.Fprintf(e.io.Stdout, "imported %s from %s in %s (read %s, write %s)\n",
		d.Counts(), src, round(time.Since(start)), round(read), round(time.Since(start)-read))
	return nil
}

func runVerify(e *env, sourceAPI, sourceToken, berthAPI string, workers, sample int) error {
	res, err := placementdiff.Compare(e.ctx, placementdiff.Params{
		Old:     placementdiff.Endpoint{Name: "placement", URL: sourceAPI, Token: sourceToken},
		New:     placementdiff.Endpoint{Name: "berth", URL: berthAPI, Token: e.g.token},
		Timeout: e.g.timeout,
		Workers: workers,
		Sample:  sample,
	})
	if err != nil {
		return err
	}
	for _, d := range res.Differences {
		fmt.Fprintln(e.io.Stdout, d)
	}
	if len(res.Differences) > 0 {
		return fmt.Errorf("%d differences in %d reads", len(res.Differences), res.Reads)
	}
	fmt.Fprintf(e.io.Stdout, "no differences in %d reads\n", res.Reads)
	return nil
}

func exportPlacementCommand() *command {
	return &command{
		name:    "export placement",
		args:    "--target URL --database-url URL",
		summary: "Copy Berth's state into an empty OpenStack Placement database (roll back)",
		help: `Writes Berth's providers, inventories, classes, traits, aggregates,
projects, users, consumer types, consumers and allocations (including those
written since the import) into a Placement 8.0.0 database whose schema
'placement-manage db sync' created, in one transaction. The target must hold
no providers, consumers or allocations. On MySQL/MariaDB, names that its
collation would take as equal (case, trailing spaces) and 4-byte characters
a utf8mb3 column cannot store are refused up front, listed.

Berth-only state (scheduling policies, scriptlets, server configuration,
agents' reports, placement keys, claim history, consumer names and
properties, evacuated providers) has no place in Placement and is
reported as not exported.`,
		example: `placement-manage db sync
berth export placement --target 'mysql+pymysql://placement:secret@db1/placement?charset=utf8' \
    --database-url postgres://berth@db2/berth`,
		setup: func(fs *flag.FlagSet) func(*env, []string) error {
			target := fs.String("target", "", "Placement database `URL` (placement.conf's connection)")
			dbURL := fs.String("database-url", "", "Berth's database `URL`; env BERTH_DATABASE_URL")
			return func(e *env, args []string) error {
				if err := argsN(args); err != nil {
					return err
				}
				if *target == "" {
					return usagef("--target is required")
				}
				source := firstNonEmpty(*dbURL, e.io.Getenv("BERTH_DATABASE_URL"))
				if source == "" {
					return usagef("--database-url (or BERTH_DATABASE_URL) is required")
				}
				dst, err := placementdb.ParseURL(*target)
				if err != nil {
					return err
				}
				start := time.Now()
				d, left, err := placementdb.ReadBerth(e.ctx, source)
				if err != nil {
					return rowsError(e, err)
				}
				if err := placementdb.WritePlacement(e.ctx, dst, d); err != nil {
					return rowsError(e, err)
				}
				if left != "" {
					fmt.Fprintf(e.io.Stderr, "berth export placement: not exported (Berth-only): %s\n", left)
				}
				fmt.Fprintf(e.io.Stdout, "exported %s to %s in %s\n", d.Counts(), dst, round(time.Since(start)))
				return nil
			}
		},
	}
}

// rowsError lists the rows a refusal names before its one line.
func rowsError(e *env, err error) error {
	var re *placementdb.RowsError
	if errors.As(err, &re) {
		listRows(e, re.Rows)
	}
	return err
}

func listRows(e *env, rows []string) {
	for i, r := range rows {
		if i == maxListed {
			fmt.Fprintf(e.io.Stderr, "  ... and %d more\n", len(rows)-maxListed)
			break
		}
		fmt.Fprintf(e.io.Stderr, "  %s\n", r)
	}
}

func round(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
