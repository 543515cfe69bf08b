package gateway

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// ExpireAt ends the sessions idle at now (tests).
func (g *Gateway) ExpireAt(ctx context.Context, now time.Time) int { return g.expire(ctx, now) }

// RebuiltTotal is how many sessions the gateway rebuilt from their tickets (tests).
func (g *Gateway) RebuiltTotal() float64 { return testutil.ToFloat64(g.m.Rebuilt) }
