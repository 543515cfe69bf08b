package signer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/podkeys"
)

// TokenReviewer asks the Kubernetes API server (POST tokenreviews, which the
// signer's ServiceAccount may create and nothing more).
type TokenReviewer struct {
	API       string       // https://host:port
	Client    *http.Client // trusts the API server's CA
	TokenFile string       // the signer's own ServiceAccount token, read at every review (kubelet rotates it)
}

var _ Reviewer = (*TokenReviewer)(nil)

type tokenReview struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Token     string   `json:"token"`
		Audiences []string `json:"audiences"`
	} `json:"spec"`
	Status struct {
		Authenticated bool `json:"authenticated"`
		User          struct {
			Username string              `json:"username"`
			Extra    map[string][]string `json:"extra"`
		} `json:"user"`
		Audiences []string `json:"audiences"`
		Error     string   `json:"error"`
	} `json:"status"`
}

// Review sends one TokenReview.
func (r *TokenReviewer) Review(ctx context.Context, token, audience string) (Review, error) {
	own, err := os.ReadFile(r.TokenFile)
	if err != nil {
		return Review{}, fmt.Errorf("the signer's own service account token: %v: %w", err, errs.ErrUnavailable)
	}
	var req tokenReview
	req.APIVersion, req.Kind = "authentication.k8s.io/v1", "TokenReview"
	req.Spec.Token, req.Spec.Audiences = token, []string{audience}
	body, _ := json.Marshal(req)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, r.API+"/apis/authentication.k8s.io/v1/tokenreviews", bytes.NewReader(body))
	if err != nil {
		return Review{}, fmt.Errorf("API address %q: %v: %w", r.API, err, errs.ErrUnavailable)
	}
	hr.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(own)))
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	resp, err := r.Client.Do(hr)
	if err != nil {
		return Review{}, fmt.Errorf("TokenReview: %v: %w", err, errs.ErrUnavailable)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Review{}, fmt.Errorf("TokenReview: reading the answer: %v: %w", err, errs.ErrUnavailable)
	}
	// 403 here is the signer's own RBAC (its binding not effective yet at
	// install): not the caller's fault, so unavailable, and the caller tries again.
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		var st struct{ Message string }
		_ = json.Unmarshal(b, &st)
		return Review{}, fmt.Errorf("TokenReview: the API server answered %s: %s: %w", resp.Status, st.Message, errs.ErrUnavailable)
	}
	var out tokenReview
	if err := json.Unmarshal(b, &out); err != nil {
		return Review{}, fmt.Errorf("TokenReview: the answer is not a TokenReview: %v: %w", err, errs.ErrUnavailable)
	}
	if !out.Status.Authenticated {
		return Review{}, fmt.Errorf("token not accepted for audience %q: %s: %w", audience, out.Status.Error, errs.ErrUnauthenticated)
	}
	return Review{Username: out.Status.User.Username, Audiences: out.Status.Audiences, Extra: out.Status.User.Extra}, nil
}

// InCluster is a TokenReviewer with the pod's own ServiceAccount credentials
// (credsDir holds token and ca.crt, as podkeys.CredentialsDir does) and the API
// server that KUBERNETES_SERVICE_HOST/PORT name.
func InCluster(credsDir string, getenv func(string) string) (*TokenReviewer, error) {
	host, port := getenv("KUBERNETES_SERVICE_HOST"), getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, fmt.Errorf("signer: KUBERNETES_SERVICE_HOST/PORT are unset (%q, %q): not in a pod?: %w", host, port, errs.ErrInvalid)
	}
	client, err := podkeys.NewClient(filepath.Join(credsDir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	return &TokenReviewer{API: "https://" + net.JoinHostPort(host, port), Client: client,
		TokenFile: filepath.Join(credsDir, "token")}, nil
}
