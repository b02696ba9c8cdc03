package httpapi

import (
	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/internal/uuid"
)

const (
	headerRequestID = "X-Openstack-Request-Id"
	ctxRequestID    = "berth.request_id"
)

// assignRequestID gives every request an id of the form req-<uuid>, returned
// in X-Openstack-Request-Id and carried in error bodies and logs.
func assignRequestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := "req-" + uuid.New()
		c.Set(ctxRequestID, id)
		c.Response().Header().Set(headerRequestID, id)
		return next(c)
	}
}

func requestID(c echo.Context) string {
	id, _ := c.Get(ctxRequestID).(string)
	return id
}
