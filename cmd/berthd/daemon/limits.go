package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/berthd/berth/claims/quota"
	"github.com/berthd/berth/internal/keystone"
)

// LimitsConfig says where the projects' limits come from and where they
// apply beyond claims (docs/quotas.md).
type LimitsConfig struct {
	// Source is quota.SourceBerth (default: the limits set through
	// Berth's own API, kept in its database) or quota.SourceKeystone
	// (Keystone's unified limits; needs Auth "keystone").
	Source string
	// KeystoneService names the service whose limits are read from
	// Keystone (by name, else by type). Default quota.DefaultService
	// ("placement").
	KeystoneService string
	// KeystoneRegion, when set, reads only that region's limits.
	KeystoneRegion string
	// CacheTTL is how long Keystone's limits are used before they are read
	// again (a change in Keystone applies within it). Default
	// quota.DefaultTTL (30s).
	CacheTTL time.Duration
	// Enforce lists where limits apply besides claims: EnforcePlacementAPI
	// checks the Placement API's allocation writes too.
	Enforce []string
}

// EnforcePlacementAPI is the LimitsConfig.Enforce value that checks the
// Placement API's writes (PUT and POST /allocations, POST /reshaper).
const EnforcePlacementAPI = "placement-api"

func defaultLimits() LimitsConfig {
	return LimitsConfig{Source: quota.SourceBerth, KeystoneService: quota.DefaultService, CacheTTL: quota.DefaultTTL}
}

// validate checks l, for berthd authenticating as auth.
func (l LimitsConfig) validate(auth string) error {
	var errs []error
	switch l.Source {
	case quota.SourceBerth:
	case quota.SourceKeystone:
		if auth != "keystone" {
			errs = append(errs, errors.New("limits source keystone needs auth keystone (Berth reads the limits as its service user)"))
		}
		if l.KeystoneService == "" {
			errs = append(errs, errors.New("limits source keystone needs a service name (--keystone-limits-service)"))
		}
	default:
		errs = append(errs, fmt.Errorf("limits source %q: want %s or %s", l.Source, quota.SourceBerth, quota.SourceKeystone))
	}
	if l.CacheTTL <= 0 {
		errs = append(errs, fmt.Errorf("limits cache ttl %v: want a positive duration", l.CacheTTL))
	}
	for _, e := range l.Enforce {
		if e != EnforcePlacementAPI {
			errs = append(errs, fmt.Errorf("limits enforce %q: want %s", e, EnforcePlacementAPI))
		}
	}
	return errors.Join(errs...)
}

// enforcePlacementAPI reports whether the Placement API's writes are
// checked.
func (l LimitsConfig) enforcePlacementAPI() bool {
	return slices.Contains(l.Enforce, EnforcePlacementAPI)
}

// source builds the limits source: nil for Berth's own (compose makes
// it), Keystone's through ks, Berth's Keystone client.
func (l LimitsConfig) source(ks *keystone.Client, log *slog.Logger) (quota.Source, error) {
	if l.Source != quota.SourceKeystone {
		return nil, nil
	}
	r, err := ks.LimitsReader(l.KeystoneService, l.KeystoneRegion)
	if err != nil {
		return nil, err
	}
	return quota.NewKeystone(quota.KeystoneConfig{Reader: r, TTL: l.CacheTTL, Logger: log})
}
