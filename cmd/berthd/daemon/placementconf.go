package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/ini.v1"

	"github.com/berthd/berth/httpapi"
)

// OpenStack Placement's own configuration.
//
// Operators deploy Placement with tools that write
// /etc/placement/placement.conf, an oslo.config INI file. berthd
// --config-file reads the options of such a file that apply to Berth
// (placementConfOptions) onto a Config, before environment variables and
// flags, which override them. Every other option in the file is named in
// PlacementConf.Unused, which berthd logs as one warning: a setting Berth
// does not honour is never dropped silently.

// PlacementConf is what ApplyPlacementConf found in the files besides the
// settings it applied.
type PlacementConf struct {
	// Unused are the options Berth does not use, as "section.option", in
	// file order.
	Unused []string
	// Notes are options Berth read but could not honour as written, each a
	// sentence for the log.
	Notes []string
}

// placementConfOption applies one option's value (the file it came from,
// for relative paths) to cfg.
type placementConfOption func(cfg *Config, value, file string, pc *PlacementConf) error

// placementConfOptions are the options berthd takes from placement.conf,
// by section and option name.
var placementConfOptions = map[string]map[string]placementConfOption{
	ini.DefaultSection:   {"debug": confDebug},
	"placement_database": {"connection": confConnection},
	"api":                {"auth_strategy": confAuthStrategy},
	"keystone_authtoken": {
		"auth_url":                      confString(func(c *Config) *string { return &c.Keystone.AuthURL }),
		"username":                      confString(func(c *Config) *string { return &c.Keystone.Username }),
		"password":                      confString(func(c *Config) *string { return &c.Keystone.Password }),
		"project_name":                  confString(func(c *Config) *string { return &c.Keystone.ProjectName }),
		"user_domain_name":              confString(func(c *Config) *string { return &c.Keystone.UserDomainName }),
		"project_domain_name":           confString(func(c *Config) *string { return &c.Keystone.ProjectDomainName }),
		"application_credential_id":     confString(func(c *Config) *string { return &c.Keystone.ApplicationCredentialID }),
		"application_credential_secret": confString(func(c *Config) *string { return &c.Keystone.ApplicationCredentialSecret }),
		"auth_type":                     confAuthType,
	},
	"placement": {
		"randomize_allocation_candidates": confRandomize,
		"max_allocation_candidates":       confMaxCandidates,
	},
	"oslo_policy": {"policy_file": confPolicyFile},
	"cors":        {"allowed_origin": confAllowedOrigin},
}

// ApplyPlacementConf reads the oslo.config INI files at paths, in order
// (an option in a later file wins, as with oslo.config's repeated
// --config-file), and sets the fields of cfg that their options name. A
// file that cannot be read or parsed, or an option whose value Berth
// cannot use (a MySQL database, an unknown auth strategy), is an error
// naming the file or option.
func ApplyPlacementConf(cfg *Config, paths []string) (PlacementConf, error) {
	var pc PlacementConf
	if len(paths) == 0 {
		return pc, nil
	}
	sources := make([]any, len(paths))
	for i, p := range paths {
		sources[i] = p
	}
	// oslo.config's syntax: "#" and ";" start a comment only at the start
	// of a line (a password may hold them), indented lines continue a
	// value, and values are not unquoted.
	f, err := ini.LoadSources(ini.LoadOptions{
		IgnoreInlineComment:        true,
		AllowPythonMultilineValues: true,
		PreserveSurroundedQuote:    true,
		KeyValueDelimiters:         "=:",
	}, sources[0], sources[1:]...)
	if err != nil {
		return pc, fmt.Errorf("config file: %w", err)
	}
	for _, sec := range f.Sections() {
		known := placementConfOptions[sec.Name()]
		for _, key := range sec.Keys() {
			apply, ok := known[key.Name()]
			if !ok {
				pc.Unused = append(pc.Unused, sec.Name()+"."+key.Name())
				continue
			}
			value := strings.TrimSpace(key.Value())
			if err := apply(cfg, value, definingFile(paths, sec.Name(), key.Name()), &pc); err != nil {
				return pc, fmt.Errorf("config file [%s] %s: %w", sec.Name(), key.Name(), err)
			}
		}
	}
	return pc, nil
}

// definingFile is the last of paths that sets option name of section:
// the file whose value won, against whose directory a relative path is
// resolved (as oslo.config does).
func definingFile(paths []string, section, name string) string {
	for _, p := range slices.Backward(paths) {
		f, err := ini.LoadSources(ini.LoadOptions{IgnoreInlineComment: true, AllowPythonMultilineValues: true}, p)
		if err == nil && f.Section(section).HasKey(name) {
			return p
		}
	}
	return paths[len(paths)-1]
}

func confString(field func(*Config) *string) placementConfOption {
	return func(cfg *Config, value, _ string, _ *PlacementConf) error {
		*field(cfg) = value
		return nil
	}
}

// confBool reads a boolean as oslo.config does: true, yes, on, 1 (any
// case) and their opposites.
func confBool(value string) (bool, error) {
	switch strings.ToLower(value) {
	case "true", "yes", "on", "1":
		return true, nil
	case "false", "no", "off", "0":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean (true or false)", value)
}

func confDebug(cfg *Config, value, _ string, _ *PlacementConf) error {
	debug, err := confBool(value)
	if err == nil && debug {
		cfg.LogLevel = "debug"
	}
	return err
}

// confConnection takes a SQLAlchemy URL (dialect+driver://...): a
// PostgreSQL one, whatever its driver, is berthd's database URL; any
// other dialect is refused, pointing at berth import placement.
func confConnection(cfg *Config, value, _ string, _ *PlacementConf) error {
	scheme, rest, ok := strings.Cut(value, "://")
	if !ok {
		return errors.New("not a database URL (dialect://user:password@host/database)")
	}
	dialect, _, _ := strings.Cut(strings.ToLower(scheme), "+")
	switch dialect {
	case "postgresql", "postgres":
		cfg.DatabaseURL = "postgresql://" + rest
		return nil
	case "mysql", "mariadb":
		return fmt.Errorf("a %s database (%s://...): Berth keeps its state in PostgreSQL; copy Placement's data "+
			"into a PostgreSQL database with 'berth import placement --source <this URL> --database-url "+
			"postgres://...' (docs/migrate-from-placement.md) and name that one here or with --database-url", dialect, scheme)
	}
	return fmt.Errorf("a %s database (%s://...): Berth needs PostgreSQL (postgresql://, or postgresql+psycopg2:// as "+
		"SQLAlchemy writes it)", dialect, scheme)
}

func confAuthStrategy(cfg *Config, value, _ string, _ *PlacementConf) error {
	switch value {
	case "keystone":
		cfg.Auth = httpapi.AuthKeystone
	case "noauth2":
		cfg.Auth = httpapi.AuthNoAuth2
	default:
		return fmt.Errorf("%q: Placement's strategies are keystone and noauth2", value)
	}
	return nil
}

// confAuthType accepts the keystoneauth plugins whose options Berth reads.
func confAuthType(_ *Config, value, _ string, _ *PlacementConf) error {
	switch value {
	case "password", "v3password", "v3applicationcredential", "applicationcredential":
		return nil
	}
	return fmt.Errorf("%q: Berth authenticates with a password or an application credential "+
		"(auth_type password or v3applicationcredential)", value)
}

func confRandomize(cfg *Config, value, _ string, _ *PlacementConf) error {
	b, err := confBool(value)
	cfg.RandomizeCandidates = b
	return err
}

// confMaxCandidates takes a positive cap; Placement's -1 (no cap) leaves
// Berth's, which a note says.
func confMaxCandidates(cfg *Config, value, _ string, pc *PlacementConf) error {
	n, err := strconv.Atoi(value)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not an integer", value)
	case n == -1:
		pc.Notes = append(pc.Notes, fmt.Sprintf("[placement] max_allocation_candidates = -1 (no cap): Berth keeps "+
			"its cap of %d candidates (--max-candidates)", cfg.MaxCandidates))
	case n < 1:
		return fmt.Errorf("%d: want a positive number, or -1", n)
	default:
		cfg.MaxCandidates = n
	}
	return nil
}

// confPolicyFile takes the policy file, relative to the directory of the
// configuration file that names it, as oslo.policy finds it. A file that
// does not exist is skipped with a note, as oslo.policy skips it.
func confPolicyFile(cfg *Config, value, file string, pc *PlacementConf) error {
	if value == "" {
		return nil
	}
	p := value
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(file), p)
	}
	if _, err := os.Stat(p); err != nil {
		pc.Notes = append(pc.Notes, fmt.Sprintf("[oslo_policy] policy_file %s: not found, so the built-in "+
			"rules apply (as in Placement)", p))
		return nil
	}
	cfg.PolicyFile = p
	return nil
}

func confAllowedOrigin(cfg *Config, value, _ string, _ *PlacementConf) error {
	cfg.CORSAllowedOrigins = nil
	for _, o := range strings.Split(value, ",") {
		if o = strings.TrimSpace(o); o != "" {
			cfg.CORSAllowedOrigins = append(cfg.CORSAllowedOrigins, o)
		}
	}
	return nil
}
