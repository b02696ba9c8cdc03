package httpapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/authz"
	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/claims/catalog"
	"github.com/berthd/berth/claims/cloud"
	"github.com/berthd/berth/claims/quota"
	"github.com/berthd/berth/httpapi/admission"
	"github.com/berthd/berth/httpapi/berthapi"
	"github.com/berthd/berth/httpapi/console"
	"github.com/berthd/berth/httpapi/placement"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/telemetry/instrument"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/audit"
	"github.com/berthd/berth/ledger/engine"
)

// Config configures the API server: the HTTP settings, and the
// components it serves, built by the caller (cmd/berthd/compose).
type Config struct {
	// Store is the ledger the handlers read and write.
	Store *ledger.Store
	// Claimer serves POST /claims and the claim moves.
	Claimer *claims.Claimer
	// Catalog holds the stored scheduling policies, scriptlets and
	// config, compiled, and writes them (checked, then reloaded). The
	// caller keeps it fresh (Catalog.Run).
	Catalog *catalog.Catalog
	// Cloud is the scheduler's view of the cloud, for the balance
	// suggestions.
	Cloud *cloud.View
	// Authz decides who may do what.
	Authz *authz.Enforcer
	// Limits are the projects' limits (docs/quotas.md), which the limits
	// routes show (and change, when Berth keeps them); nil means the
	// limits Berth keeps in Store (quota.Stored).
	Limits quota.Source
	// LimitsEnforcePlacementAPI checks the Placement API's allocation
	// writes (PUT and POST /allocations, POST /reshaper) against Limits
	// too (--limits-enforce placement-api); claims always are.
	LimitsEnforcePlacementAPI bool

	// Auth is AuthNoAuth2 (default), AuthTokens or AuthKeystoneHeaders.
	Auth string
	// Tokens maps static tokens to principals when Auth is AuthTokens.
	Tokens map[string]authz.Credentials
	// Keystone validates tokens when Auth is AuthKeystone (required then).
	Keystone KeystoneAuthenticator
	// CORSAllowedOrigins are the origins (scheme://host[:port], or "*")
	// whose browsers may call the API across origins; empty disables CORS,
	// and OPTIONS is answered 405 as by Placement without CORS.
	CORSAllowedOrigins []string
	// RandomizeCandidates shuffles allocation candidates instead of
	// returning them in a deterministic order.
	RandomizeCandidates bool
	// MaxCandidates caps how many allocation candidates one request may
	// generate before limit is applied; 0 means engine.DefaultMaxCandidates.
	MaxCandidates int
	// CandidatesCacheBytes bounds the bytes of GET /allocation_candidates
	// answers kept for queries asked again of an unchanged cloud
	// (placement.AnswerCache); 0 keeps none.
	CandidatesCacheBytes int
	// MaxBodyBytes caps request bodies; 0 means 32 MiB.
	MaxBodyBytes int64
	// MetricsHandler, if set, serves GET /metrics without authentication
	// (see health.go); nil leaves /metrics unrouted.
	MetricsHandler http.Handler
	// RequestTimeout bounds the work of one request: its context ends
	// then, so a database call that gets no answer (a silent network)
	// fails with 503 berth.database_unavailable instead of holding the
	// client. 0 means DefaultRequestTimeout; negative disables it.
	RequestTimeout time.Duration
	// MaxInflightExpensive bounds the expensive requests (candidates,
	// claims, lists; see package admission) running at once; 0 means
	// admission.DefaultMaxInflightExpensive(), negative no bound.
	// AdmissionQueueTimeout is how long one waits for its turn before a
	// 503 berth.overloaded; 0 means admission.DefaultQueueTimeout.
	MaxInflightExpensive  int
	AdmissionQueueTimeout time.Duration
	// AuditThresholds are the ages GET /audit and POST /audit/fix use
	// when a request names none; a zero field means its default
	// (audit.DefaultAuditThresholds).
	AuditThresholds audit.AuditThresholds
}

// DefaultRequestTimeout is the request deadline used when
// Config.RequestTimeout is 0: far above any request's normal duration.
const DefaultRequestTimeout = time.Minute

func (c *Config) setDefaults() error {
	switch c.Auth {
	case "":
		c.Auth = AuthNoAuth2
	case AuthNoAuth2, AuthTokens, AuthKeystoneHeaders:
	case AuthKeystone:
		if c.Keystone == nil {
			return errors.New("httpapi: auth keystone needs Config.Keystone")
		}
	default:
		return fmt.Errorf("httpapi: unknown auth strategy %q", c.Auth)
	}
	for _, o := range c.CORSAllowedOrigins {
		if err := ValidateOrigin(o); err != nil {
			return fmt.Errorf("httpapi: %w", err)
		}
	}
	if c.MaxCandidates <= 0 {
		c.MaxCandidates = engine.DefaultMaxCandidates
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 32 << 20
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	def := audit.DefaultAuditThresholds()
	if c.AuditThresholds.MigrationAge == 0 {
		c.AuditThresholds.MigrationAge = def.MigrationAge
	}
	if c.AuditThresholds.StateAge == 0 {
		c.AuditThresholds.StateAge = def.StateAge
	}
	if c.AuditThresholds.MigrationAge < 0 || c.AuditThresholds.StateAge < 0 {
		return errors.New("httpapi: audit thresholds must not be negative")
	}
	return nil
}

// Server is the Placement API server. It implements http.Handler.
type Server struct {
	cfg   Config
	authz *authz.Enforcer
	store *ledger.Store
	log   *slog.Logger
	e     *echo.Echo
	// requests pools the echo.Context of the API's requests (chain.go).
	requests sync.Pool
	meters   *httpMeters
	// cors answers and decorates cross-origin requests; nil without
	// Config.CORSAllowedOrigins.
	cors *cors
	// draining is set by Drain: /readyz fails from then on.
	draining atomic.Bool
	// slots bound the expensive requests in flight (package admission).
	slots *admission.Slots
	// budget bounds the large request bodies held at once (package
	// admission); bodies reads them (package wire).
	budget *admission.BodyBudget
	bodies *wire.Bodies
	// outage rate-limits the log lines of 503s for an unavailable
	// database (outage.go).
	outage outageLog
	// console serves the operator console at /ui (package console).
	console *console.Console
	// allow is the Allow header of a 405 for each route path, the
	// methods in the route table's order (Placement's declaration order).
	allow map[string]string
	// openapi is GET /openapi.json's answer, built once (openapi.go).
	openapi []byte
	// The handlers of the route table (routes.go), one per route family.
	placement placementHandlers
	berth     berthHandlers
}

// placementHandlers serve Placement's routes (package placement).
type placementHandlers struct {
	providers   *placement.Providers
	inventories *placement.Inventories
	usages      *placement.Usages
	classes     *placement.ResourceClasses
	aggregates  *placement.Aggregates
	traits      *placement.Traits
	allocations *placement.Allocations
	candidates  *placement.Candidates
}

// berthHandlers serve Berth's own routes (package berthapi).
type berthHandlers struct {
	claims      *berthapi.Claims
	evacuations *berthapi.Evacuations
	capacity    *berthapi.Capacity
	states      *berthapi.ProviderStates
	keys        *berthapi.PlacementKeys
	policies    *berthapi.Policies
	scriptlets  *berthapi.Scriptlets
	shadows     *berthapi.Shadows
	settings    *berthapi.Settings
	audit       *berthapi.Audit
	limits      *berthapi.Limits
	preemptions *berthapi.Preemptions
}

// New builds the API server over the components of cfg. It builds none
// of them: cmd/berthd/compose does.
func New(cfg Config, logger *slog.Logger) (*Server, error) {
	if cfg.Claimer == nil || cfg.Catalog == nil || cfg.Cloud == nil || cfg.Authz == nil {
		return nil, errors.New("httpapi: Config needs the Claimer, Catalog, Cloud and Authz components (see cmd/berthd/compose)")
	}
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	// Log lines written with a request's context carry its request id.
	logger = slog.New(instrument.LogHandler(logger.Handler()))
	if cfg.Limits == nil {
		cfg.Limits = quota.Stored{Store: cfg.Store}
	}
	s := &Server{cfg: cfg, authz: cfg.Authz, store: cfg.Store, log: logger, e: echo.New(), meters: newMeters()}
	s.e.HideBanner = true
	s.e.HidePort = true
	s.e.HTTPErrorHandler = s.errorHandler
	s.requests.New = func() any { return &request{Context: s.e.NewContext(nil, nil)} }
	if len(cfg.CORSAllowedOrigins) > 0 {
		s.cors = newCORS(cfg.CORSAllowedOrigins)
	}
	s.slots = admission.NewSlots(cfg.MaxInflightExpensive, cfg.AdmissionQueueTimeout)
	s.budget = admission.NewBodyBudget(cfg.AdmissionQueueTimeout)
	s.bodies = wire.NewBodies(cfg.MaxBodyBytes, s.budget)
	s.placement, s.berth = s.handlers()
	s.addRoutes()
	openapi, err := openAPIDocument(s.routes())
	if err != nil {
		return nil, fmt.Errorf("httpapi: the API's description: %w", err)
	}
	s.openapi = openapi
	parts := s.parts()
	if s.console, err = console.New(console.Config{
		Store: console.Store{Providers: parts.Providers, Allocations: parts.Allocations, Snapshots: parts.Snapshots,
			Cloud: parts.Cloud, Catalogue: parts.Catalogue, Quotas: parts.Quotas, Auditor: parts.Auditor, Claims: parts.Claims,
			Preemptions: parts.Claims},
		Claims: s.berth.claims, Capacity: s.berth.capacity, Catalog: cfg.Catalog,
		Limits: cfg.Limits, Authz: cfg.Authz, Authenticate: s.credentials,
		AdminWithoutToken: cfg.Auth == AuthNoAuth2, Auth: cfg.Auth, AuditThresholds: cfg.AuditThresholds,
		Log: logger, ErrorOf: toError, Middleware: []echo.MiddlewareFunc{s.consoleChain},
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// handlers builds the handlers of the route table over the components of
// s.cfg, each given only what it uses.
func (s *Server) handlers() (placementHandlers, berthHandlers) {
	cfg, store, bodies := s.cfg, s.parts(), s.bodies
	query := placement.CandidateQuery{Randomize: cfg.RandomizeCandidates, Max: cfg.MaxCandidates}
	allocations := &placement.Allocations{Store: store.Allocations, Bodies: bodies}
	if cfg.LimitsEnforcePlacementAPI {
		allocations.Limits = cfg.Limits
	}
	p := placementHandlers{
		providers:   &placement.Providers{Store: store.Providers, Snapshots: store.Snapshots, Bodies: bodies},
		inventories: &placement.Inventories{Store: store.Providers, Bodies: bodies},
		usages:      &placement.Usages{Store: store.Providers},
		classes:     &placement.ResourceClasses{Store: store.Providers, Bodies: bodies},
		aggregates:  &placement.Aggregates{Store: store.Providers, Bodies: bodies},
		traits:      &placement.Traits{Store: store.Providers, Bodies: bodies},
		allocations: allocations,
		candidates: &placement.Candidates{Store: store.Snapshots, Query: query,
			Cache: placement.NewAnswerCache(cfg.CandidatesCacheBytes)},
	}
	claimHandlers := &berthapi.Claims{Claimer: cfg.Claimer, Bodies: bodies, Query: query}
	b := berthHandlers{
		claims:      claimHandlers,
		evacuations: &berthapi.Evacuations{Claimer: cfg.Claimer, Bodies: bodies, Claims: claimHandlers},
		capacity:    &berthapi.Capacity{Store: store.Snapshots, Providers: store.Providers, Query: query},
		states:      &berthapi.ProviderStates{Store: store.Cloud, Bodies: bodies},
		keys:        &berthapi.PlacementKeys{Store: store.Cloud, Bodies: bodies, Rules: callerRules{s.authz}},
		policies:    &berthapi.Policies{Store: store.Catalogue, Catalog: cfg.Catalog, Cloud: cfg.Cloud, Bodies: bodies},
		scriptlets:  &berthapi.Scriptlets{Store: store.Catalogue, Catalog: cfg.Catalog, Claims: claimHandlers},
		shadows:     &berthapi.Shadows{Catalog: cfg.Catalog, Bodies: bodies},
		settings:    &berthapi.Settings{Store: store.Catalogue, Catalog: cfg.Catalog, Bodies: bodies},
		audit:       &berthapi.Audit{Store: store.Auditor, Bodies: bodies, Thresholds: cfg.AuditThresholds},
		limits:      &berthapi.Limits{Source: cfg.Limits, Store: store.Quotas, Bodies: bodies},
		preemptions: &berthapi.Preemptions{Store: store.Claims},
	}
	return p, b
}

// parts is the ledger whose parts the handlers are given: cfg.Store, or,
// for a server built without one (tests of what never reaches the
// ledger), a Store whose parts are all nil.
func (s *Server) parts() *ledger.Store {
	if s.cfg.Store == nil {
		return &ledger.Store{}
	}
	return s.cfg.Store
}

// root serves the version document.
func (s *Server) root(c echo.Context) error {
	wire.SetCacheHeaders(c, time.Now())
	return wire.WriteJSON(c, http.StatusOK, map[string]any{
		"versions": []any{map[string]any{
			"id":          "v1.0",
			"max_version": wire.MaxVersion.String(),
			"min_version": wire.MinVersion.String(),
			"status":      "CURRENT",
			"links":       []any{map[string]any{"rel": "self", "href": ""}},
		}},
	})
}
