package signer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/satpage/satpage/services/internal/errs"
)

// Path is where the signer takes certificate requests: POST, the request's PEM
// as the body, "Authorization: Bearer <token>"; the answer is the certificate's
// PEM (200) or a one-line reason (400, 401, 403, 503).
const Path = "/v1/certificate"

// reviewTimeout bounds one request's TokenReview and signing.
const reviewTimeout = 10 * time.Second

// Handler serves Path.
func (s *Signer) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+Path, s.serve)
	return mux
}

func (s *Signer) serve(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), reviewTimeout)
	defer cancel()
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		http.Error(w, "reading the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	cert, i, err := s.Sign(ctx, token, body)
	if err != nil {
		code := statusOf(err)
		s.o.Logger.Warn("certificate refused", "from", r.RemoteAddr, "status", code, "err", err)
		http.Error(w, err.Error(), code)
		return
	}
	s.o.Logger.Info("certificate issued", "satellite", i, "from", r.RemoteAddr)
	w.Header().Set("Content-Type", "application/pem-certificate-chain")
	_, _ = w.Write(cert)
}

// statusOf maps the sentinel errors to HTTP statuses (the one place that does).
func statusOf(err error) int {
	switch {
	case errors.Is(err, errs.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, errs.ErrUnauthenticated):
		return http.StatusUnauthorized
	case errors.Is(err, errs.ErrPermissionDenied):
		return http.StatusForbidden
	case errors.Is(err, errs.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// Serve serves h over TLS on ln (server-authenticated only: the callers have no
// certificate yet) until ctx ends, then stops within 5 s; it returns once
// everything it started has ended.
func Serve(ctx context.Context, ln net.Listener, cfg *tls.Config, h http.Handler, log *slog.Logger) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 30 * time.Second,
		// Handshakes that fail (a prober, a caller without the CA) at debug, not on stderr.
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-ctx.Done():
		case <-done:
		}
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	})
	err := srv.Serve(tls.NewListener(ln, cfg))
	close(done)
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("signer on %s: %w", ln.Addr(), err)
}

// ServerTLS is the signer's TLS configuration: cert (the gateway's), TLS 1.3,
// no client certificate asked for.
func ServerTLS(cert tls.Certificate) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}}
}
