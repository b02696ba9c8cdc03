package httpapi

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/berthd/berth/internal/fault"
)

// outageLog keeps a database outage from flooding the log. During a
// failover every request answers 503 berth.database_unavailable for a
// few seconds: hundreds of identical lines per process, each at ERROR.
// Such a 503 is an expected, handled condition (the client is told to
// retry), so it is logged at WARN, at most once per outageLogEvery, with
// the number of 503s left out since; the rest go at debug level. The
// ledger logs the switch of the primary itself once.
type outageLog struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// outageLogEvery is the least time between two WARN lines of one outage.
const outageLogEvery = 5 * time.Second

// log logs one 503 for an unavailable database.
func (o *outageLog) log(ctx context.Context, log *slog.Logger, err error) {
	o.mu.Lock()
	now := time.Now()
	warn := now.Sub(o.last) >= outageLogEvery
	suppressed := o.suppressed
	if warn {
		o.last, o.suppressed = now, 0
	} else {
		o.suppressed++
	}
	o.mu.Unlock()
	if warn {
		log.WarnContext(ctx, "database unavailable; answering 503 with Retry-After",
			"error", fault.Detail(err), "suppressed_since_last", suppressed)
		return
	}
	log.DebugContext(ctx, "request failed: database unavailable", "error", fault.Detail(err))
}
