package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/uuid"
)

// Paths served ahead of the API: no authentication, no microversion
// negotiation, no request log line (probes arrive every few seconds).
const (
	PathHealthz = "/healthz"
	PathReadyz  = "/readyz"
	PathMetrics = "/metrics"
)

// readyTimeout bounds the database query of one readiness probe.
const readyTimeout = 2 * time.Second

// serveOps serves the probe and metrics paths and reports whether r was
// one of them.
func (s *Server) serveOps(w http.ResponseWriter, r *http.Request) bool {
	var h http.HandlerFunc
	switch r.URL.Path {
	case PathHealthz:
		h = s.healthz
	case PathReadyz:
		h = s.readyz
	case PathMetrics:
		if s.cfg.MetricsHandler == nil {
			return false
		}
		h = s.cfg.MetricsHandler.ServeHTTP
	default:
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeServerError(w, http.StatusMethodNotAllowed, "The method specified is not allowed for this resource.")
		return true
	}
	h(w, r)
	return true
}

// healthz answers 200 "ok" while the process can serve HTTP at all: the
// liveness probe. It touches nothing else.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeProbe(w, http.StatusOK, "ok")
}

// readyz answers 200 when this replica should get traffic: the database
// answers and its schema is one this binary can use, Keystone answers
// (with AuthKeystone), and the process is not draining for shutdown.
// Otherwise 503 with the reason. It costs one short query (and one
// request to Keystone). The probe needs no credentials, so a database or
// Keystone error is answered only as "database unreachable" or "keystone
// unreachable": its text (user, database name, address) goes to the log.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		writeProbe(w, http.StatusServiceUnavailable, "shutting down")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	st, err := s.store.SchemaStatus(ctx)
	kerr := s.keystoneReady(ctx)
	switch {
	case err != nil:
		s.log.WarnContext(r.Context(), "readiness probe: database unreachable", "error", err)
		writeProbe(w, http.StatusServiceUnavailable, "database unreachable")
	case !st.Current():
		writeProbe(w, http.StatusServiceUnavailable, st.String())
	case kerr != nil:
		s.log.WarnContext(r.Context(), "readiness probe: keystone unreachable", "error", kerr)
		writeProbe(w, http.StatusServiceUnavailable, "keystone unreachable")
	default:
		writeProbe(w, http.StatusOK, "ok: "+st.String())
	}
}

func writeProbe(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = fmt.Fprintln(w, msg)
}

// Drain makes /readyz answer 503 "shutting down" from now on, so that
// load balancers stop sending requests before the server stops
// accepting them. Requests are still served.
func (s *Server) Drain() { s.draining.Store(true) }

// writeServerError answers status in Placement's error format with
// detail, for the handlers outside the API's router (the probes).
func writeServerError(w http.ResponseWriter, status int, detail string) {
	id := "req-" + uuid.New()
	body := wire.ServerErrorBody(status, detail, id)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Header().Set(wire.HeaderRequestID, id)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
