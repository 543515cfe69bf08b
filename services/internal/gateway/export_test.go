package gateway

import (
	"context"
	"time"
)

// ExpireAt ends the sessions idle at now (tests).
func (g *Gateway) ExpireAt(ctx context.Context, now time.Time) int { return g.expire(ctx, now) }
