package quota

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/keystone"
	"github.com/berthd/berth/ledger/quotas"
)

// Defaults of KeystoneConfig.
const (
	DefaultTTL       = 30 * time.Second
	DefaultCacheSize = 100000
	// DefaultService is the service whose limits are read.
	DefaultService = "placement"
)

// retryInterval: after a read that failed, limits already read are used
// without asking Keystone again for this long, so that an outage does not
// make every claim wait for a timeout.
const retryInterval = time.Second

// Reader reads Keystone's limits of one service
// (keystone.LimitsReader).
type Reader interface {
	Registered(ctx context.Context) ([]keystone.Limit, error)
	Projects(ctx context.Context, project string) ([]keystone.Limit, error)
}

var _ Reader = (*keystone.LimitsReader)(nil)

// KeystoneConfig configures a Keystone source.
type KeystoneConfig struct {
	// Reader reads the limits.
	Reader Reader
	// TTL is how long limits read are used before they are read again: a
	// limit changed in Keystone applies within it. 0 means DefaultTTL.
	TTL time.Duration
	// CacheSize bounds the projects whose limits are kept (least recently
	// used first out). 0 means DefaultCacheSize.
	CacheSize int
	// Logger receives warnings; nil means slog.Default().
	Logger *slog.Logger
}

// Keystone is Keystone's unified limits (--limits-source keystone), read
// through a cache: each project's limits and the registered ones are
// read at most once per TTL (concurrent readers of one share one
// request). While Keystone cannot be read, the limits last read stay in
// force; a project never read is refused (fault.ErrUnavailable,
// fault.CodeLimitsUnavailable: 503).
type Keystone struct {
	r     Reader
	ttl   time.Duration
	log   *slog.Logger
	cache *lru.Cache[string, entry]
	group singleflight.Group
	// failed is when a read last failed (unix nanoseconds; 0: never).
	failed atomic.Int64
	// warned is when a failure was last logged (unix nanoseconds).
	warned atomic.Int64
}

var _ Source = (*Keystone)(nil)

// entry is a cached read: Berth's resources and Keystone's limits (-1:
// unlimited), and when they were read.
type entry struct {
	limits quotas.Limits
	read   time.Time
}

// registeredKey is the cache key of the registered limits (a project id
// is never empty).
const registeredKey = ""

// NewKeystone returns a Keystone source over cfg.Reader.
func NewKeystone(cfg KeystoneConfig) (*Keystone, error) {
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.CacheSize == 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cache, err := lru.New[string, entry](cfg.CacheSize)
	if err != nil {
		return nil, err
	}
	return &Keystone{r: cfg.Reader, ttl: cfg.TTL, log: cfg.Logger, cache: cache}, nil
}

// Name is SourceKeystone.
func (*Keystone) Name() string { return SourceKeystone }

// Writable is false: the limits are Keystone's.
func (*Keystone) Writable() bool { return false }

// Quota returns the limits of projects as Keystone gives them.
func (k *Keystone) Quota(ctx context.Context, projects ...string) (*quotas.Quota, error) {
	q := &quotas.Quota{Given: make(map[string]quotas.Limits, len(projects))}
	for _, p := range projects {
		if _, done := q.Given[p]; done {
			continue
		}
		own, registered, err := k.Limits(ctx, p)
		if err != nil {
			return nil, err
		}
		q.Given[p] = Effective(own, registered)
	}
	return q, nil
}

// Limits returns project's own limits and the registered ones, -1 for
// unlimited (Keystone's word for it).
func (k *Keystone) Limits(ctx context.Context, project string) (own, registered quotas.Limits, err error) {
	if registered, err = k.Registered(ctx); err != nil {
		return nil, nil, err
	}
	own, err = k.read(ctx, project, func(ctx context.Context) ([]keystone.Limit, error) { return k.r.Projects(ctx, project) })
	if err != nil {
		return nil, nil, err
	}
	return own, registered, nil
}

// Registered returns the registered limits.
func (k *Keystone) Registered(ctx context.Context) (quotas.Limits, error) {
	return k.read(ctx, registeredKey, k.r.Registered)
}

// Projects reads every project's own limits from Keystone (not cached).
func (k *Keystone) Projects(ctx context.Context) (map[string]quotas.Limits, error) {
	all, err := k.r.Projects(ctx, "")
	if err != nil {
		return nil, unavailable("", err)
	}
	by := map[string][]keystone.Limit{}
	for _, l := range all {
		by[l.Project] = append(by[l.Project], l)
	}
	out := make(map[string]quotas.Limits, len(by))
	for p, ls := range by {
		out[p] = berthLimits(ls)
	}
	return out, nil
}

// read returns the limits cached under key, reading them with fetch when
// they are older than the TTL; when that fails, the limits read before
// stay (and are used without asking again for retryInterval); with none
// read before, it is a 503.
func (k *Keystone) read(ctx context.Context, key string, fetch func(context.Context) ([]keystone.Limit, error)) (quotas.Limits, error) {
	e, cached := k.cache.Get(key)
	if cached && (time.Since(e.read) < k.ttl || time.Since(time.Unix(0, k.failed.Load())) < retryInterval) {
		return e.limits, nil
	}
	v, err, _ := k.group.Do(key, func() (any, error) {
		// The flight serves every caller waiting on it: it must not end
		// because the first one went away.
		ls, err := fetch(context.WithoutCancel(ctx))
		if err != nil {
			k.failed.Store(time.Now().UnixNano())
			return nil, err
		}
		l := berthLimits(ls)
		k.cache.Add(key, entry{limits: l, read: time.Now()})
		return l, nil
	})
	if err == nil {
		return v.(quotas.Limits), nil
	}
	if cached {
		k.warn(key, e.read, err)
		return e.limits, nil
	}
	return nil, unavailable(key, err)
}

// warn logs, at most once per retryInterval, that limits read earlier
// stay in force.
func (k *Keystone) warn(key string, read time.Time, err error) {
	now := time.Now().UnixNano()
	last := k.warned.Load()
	if now-last < int64(retryInterval) || !k.warned.CompareAndSwap(last, now) {
		return
	}
	what := "project " + key
	if key == registeredKey {
		what = "registered"
	}
	k.log.Warn("quota: Keystone's limits could not be read; the limits read before stay in force",
		"limits", what, "read_ago", time.Since(read).Round(time.Second), "error", err)
}

// unavailable is the refusal of a write whose project's limits were
// never read and cannot be.
func unavailable(project string, err error) error {
	what := "The registered limits"
	if project != "" {
		what = "The limits of project " + project
	}
	return &fault.Error{Kind: fault.ErrUnavailable, Code: fault.CodeLimitsUnavailable,
		Msg: fmt.Sprintf("%s could not be read from Keystone.", what), Cause: err}
}

// berthLimits are Keystone's limits ls under Berth's resource names, with
// Nova's names mapped (package doc) and others left out; of limits of one
// resource in several regions, the smallest.
func berthLimits(ls []keystone.Limit) quotas.Limits {
	out := quotas.Limits{}
	for _, l := range ls {
		r, ok := Resource(l.Resource)
		if !ok {
			continue
		}
		if v, seen := out[r]; !seen || lower(l.Limit, v) {
			out[r] = l.Limit
		}
	}
	return out
}

// lower reports whether limit a holds less than b (-1 holds the most).
func lower(a, b int64) bool {
	switch {
	case a < 0:
		return false
	case b < 0:
		return true
	}
	return a < b
}

// Keystone's resource names, as Nova's unified limits name them.
const (
	keystoneClassPrefix = "class:"
	keystoneServers     = "servers"
)

// Resource is Berth's resource for Keystone's resource name: the class of
// "class:X", quotas.ResourceConsumers for "servers"; ok false for a name
// that is not Berth's.
func Resource(keystoneName string) (resource string, ok bool) {
	switch {
	case keystoneName == keystoneServers:
		return quotas.ResourceConsumers, true
	case strings.HasPrefix(keystoneName, keystoneClassPrefix) && len(keystoneName) > len(keystoneClassPrefix):
		return strings.TrimPrefix(keystoneName, keystoneClassPrefix), true
	}
	return "", false
}

// KeystoneName is Keystone's name of Berth's resource.
func KeystoneName(resource string) string {
	if resource == quotas.ResourceConsumers {
		return keystoneServers
	}
	return keystoneClassPrefix + resource
}
