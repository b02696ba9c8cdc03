package berthapi

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/uuid"
	"github.com/berthd/berth/scheduler"
)

// GET /scheduling_policies/{name}/balance[?aggregate=uuid] (Berth's
// extension): what the policy's balancer suggests now, over the root
// providers (of the aggregate) and the consumers on them. It suggests; it
// moves nothing (POST /claims/{consumer}/move does).

// Balance serves GET /scheduling_policies/{name}/balance.
func (h *Policies) Balance(c echo.Context) error {
	ctx := c.Request().Context()
	name := c.Param("name")
	cfg, err := h.Catalog.PolicyConfig(ctx, name)
	if err != nil {
		return err
	}
	if cfg.Balancer == nil {
		return wire.BadRequest("Scheduling policy %s has no balancer.", name)
	}
	aggregate := c.QueryParam("aggregate")
	if aggregate != "" {
		if !uuid.Valid(aggregate) {
			return wire.BadRequest("Invalid aggregate %q: want a uuid.", aggregate)
		}
	}
	members, err := h.Cloud.Members(ctx, aggregate)
	if err != nil {
		return err
	}
	instances, err := h.Cloud.Instances(ctx, scheduler.InstancesQuery{})
	if err != nil {
		return err
	}
	sug := scheduler.Balance(*cfg.Balancer, members, instances)
	if sug == nil {
		bc := cfg.Balancer.WithDefaults()
		noun := "providers"
		if len(members) == 1 {
			noun = "provider"
		}
		reason := fmt.Sprintf("no consumer of the %d %s can move under mode %s (high %g, low %g)",
			len(members), noun, bc.Mode, bc.High, bc.Low)
		return wire.WriteJSON(c, http.StatusOK, map[string]any{"suggestion": nil, "mode": cfg.Balancer.Mode, "members": len(members), "reason": reason})
	}
	return wire.WriteJSON(c, http.StatusOK, sug)
}
