package daemon

import (
	"log/slog"

	"github.com/berthd/berth/authz"
)

// LoadPolicy builds the policy enforcer cfg asks for: the built-in set
// cfg.Policy with the overrides of cfg.PolicyFile, if any. It logs a
// warning for each override that names neither a Placement rule nor a rule
// that another rule refers to (a typo leaves the default in force). The
// file is read once, at start.
func LoadPolicy(cfg Config, log *slog.Logger) (*authz.Enforcer, error) {
	var overrides map[string]string
	if cfg.PolicyFile != "" {
		var err error
		if overrides, err = authz.LoadFile(cfg.PolicyFile); err != nil {
			return nil, err
		}
	}
	e, err := authz.New(cfg.Policy, overrides)
	if err != nil {
		return nil, err
	}
	for _, name := range e.Unused() {
		log.Warn("policy file defines a rule that is not a Placement rule and that no rule refers to",
			"rule", name, "path", cfg.PolicyFile)
	}
	return e, nil
}
