// Package podkeys is the init step of a satellite pod (`satnode fetch-tls`):
// it reads this satellite's own Secret from the Kubernetes API and writes the
// files it names into a pod-local directory (an in-memory emptyDir) that the
// satnode container mounts read-only.
//
// Why an API call and not a volume: a StatefulSet has one pod template, so a
// Secret volume is the same in every pod, and mounting every satellite's
// Secret hands every pod every key. The pod ordinal, known only inside the
// pod (its hostname), picks the Secret here instead. The ServiceAccount token
// that allows the read is mounted into the init container alone, never into
// satnode, and the Role grants `get` on the satellites' Secrets only
// (docs/security.md).
//
// The API server may answer 403 or 404 for a while at install time (a
// RoleBinding not yet effective, a Secret cert-manager has not issued yet):
// every failure is tried again with capped exponential backoff and full
// jitter, within one deadline.
package podkeys

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/satpage/satpage/services/internal/config"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/tlsconf"
)

// CredentialsDir is where Kubernetes mounts a ServiceAccount's token, the API
// server's CA (ca.crt) and the pod's namespace.
const CredentialsDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// File is one key of the Secret and the file name it is written to.
type File struct {
	Key, Name string
}

// Options of one fetch.
type Options struct {
	API       string       // https://host:port of the API server
	Client    *http.Client // trusts the API server's CA
	TokenFile string       // bearer token, read at every attempt (kubelet rotates it)
	Namespace string
	Secret    string
	Files     []File
	Out       string        // existing directory
	Timeout   time.Duration // for all attempts together
	// Backoff is the first pause between attempts; it doubles up to MaxBackoff,
	// and each pause is drawn uniformly from [0, current] (full jitter).
	Backoff, MaxBackoff time.Duration
	Logger              *slog.Logger
}

// errRetry marks a failure worth another attempt.
var errRetry = errors.New("temporary")

// Fetch reads the Secret and writes Files into Out (mode 0400, each file
// replaced atomically), trying again until Timeout. The error names the
// Secret, the namespace and the last failure.
func Fetch(ctx context.Context, o Options) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	backoff := o.Backoff
	var last error // the last failure of a whole attempt (not one the deadline cut short)
	for attempt := 1; ; attempt++ {
		data, err := get(ctx, o)
		if err == nil {
			err = write(o, data)
		}
		if err == nil {
			o.Logger.Info("TLS material fetched", "secret", o.Secret, "namespace", o.Namespace,
				"files", len(o.Files), "attempts", attempt)
			return nil
		}
		if !errors.Is(err, errRetry) {
			return fmt.Errorf("secret %s/%s: %w", o.Namespace, o.Secret, err)
		}
		if ctx.Err() == nil || last == nil {
			last = err
		}
		pause := time.Duration(rand.Int64N(int64(backoff) + 1))
		o.Logger.Warn("secret not readable yet; trying again", "secret", o.Secret, "namespace", o.Namespace,
			"attempt", attempt, "in", pause.Round(time.Millisecond).String(), "err", err)
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return fmt.Errorf("secret %s/%s: no answer within %s, last: %v: %w", o.Namespace, o.Secret,
				o.Timeout, last, errs.ErrUnavailable)
		}
		backoff = min(2*backoff, o.MaxBackoff)
	}
}

// get is one GET of the Secret: its data, base64-decoded.
func get(ctx context.Context, o Options) (map[string][]byte, error) {
	tok, err := os.ReadFile(o.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("service account token: %v: %w", err, errs.ErrInvalid)
	}
	u := o.API + "/api/v1/namespaces/" + url.PathEscape(o.Namespace) + "/secrets/" + url.PathEscape(o.Secret)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("API address %q: %v: %w", o.API, err, errs.ErrInvalid)
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	req.Header.Set("Accept", "application/json")
	resp, err := o.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, errRetry)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %v: %w", err, errRetry)
	}
	if resp.StatusCode != http.StatusOK {
		var st struct{ Message string }
		_ = json.Unmarshal(body, &st)
		err := fmt.Errorf("API server answered %s: %s", resp.Status, st.Message)
		switch resp.StatusCode {
		// 403: the RoleBinding may not be effective yet; 404: the Secret may not
		// be issued yet (cert-manager); 429 and 5xx: an overloaded API server.
		case http.StatusForbidden, http.StatusNotFound, http.StatusTooManyRequests,
			http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return nil, fmt.Errorf("%w: %w", err, errRetry)
		}
		return nil, fmt.Errorf("%w: %w", err, errs.ErrInvalid)
	}
	var s struct{ Data map[string][]byte } // encoding/json decodes base64 into []byte
	if err := json.Unmarshal(body, &s); err != nil {
		return nil, fmt.Errorf("the answer is not a Secret: %v: %w", err, errs.ErrInvalid)
	}
	for _, f := range o.Files {
		if len(s.Data[f.Key]) == 0 { // a Secret being issued may lack keys for a moment
			return nil, fmt.Errorf("no key %q in it: %w", f.Key, errRetry)
		}
	}
	return s.Data, nil
}

func write(o Options, data map[string][]byte) error {
	for _, f := range o.Files {
		path := filepath.Join(o.Out, f.Name)
		if err := tlsconf.WriteOwnerOnly(path, data[f.Key]); err != nil {
			return err
		}
	}
	return nil
}

// Run is `satnode fetch-tls ARGS`: flags, the in-cluster API location and
// credentials, then Fetch. hostname gives the satellite index when --index
// is not set (the StatefulSet pod's ordinal suffix), as for satnode itself.
func Run(ctx context.Context, args []string, getenv func(string) string, hostname string,
	usage io.Writer, log *slog.Logger) error {
	fs := flag.NewFlagSet("satnode fetch-tls", flag.ContinueOnError)
	fs.SetOutput(usage)
	secret := fs.String("secret", "", "Secret to read; {index} is replaced by the satellite index")
	out := fs.String("out", "", "existing directory the files are written to (an in-memory emptyDir)")
	index := fs.Int("index", -1, "satellite index (default: the ordinal suffix of the hostname)")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	creds := fs.String("credentials", CredentialsDir, "directory with the ServiceAccount's token, ca.crt and namespace")
	api := fs.String("api", "", "API server URL (default: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT)")
	var files []File
	fs.Func("file", "KEY=NAME: write the Secret's KEY to NAME in --out ({index} replaced); repeat", func(v string) error {
		k, n, ok := strings.Cut(v, "=")
		if !ok || k == "" || n == "" || strings.ContainsRune(n, '/') {
			return fmt.Errorf("%q is not KEY=NAME with a plain file name", v)
		}
		files = append(files, File{Key: k, Name: n})
		return nil
	})
	fs.Usage = func() {
		fmt.Fprintln(usage, "Usage: satnode fetch-tls --secret NAME --out DIR --file KEY=NAME...\n\n"+
			"Writes this satellite's TLS files from its own Kubernetes Secret (docs/security.md).")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	bad := func(format string, a ...any) error { return fmt.Errorf(format+": %w", append(a, errs.ErrInvalid)...) }
	if fs.NArg() > 0 {
		return bad("unexpected argument %q", fs.Arg(0))
	}
	if *index < 0 {
		if *index = config.IndexFromHostname(hostname); *index < 0 {
			return bad("no --index, and hostname %q has no ordinal suffix", hostname)
		}
	}
	if *secret == "" || len(files) == 0 || *out == "" {
		return bad("--secret (%q), --out (%q) and at least one --file are required", *secret, *out)
	}
	if *timeout <= 0 {
		return bad("--timeout %s is not positive", *timeout)
	}
	if st, err := os.Stat(*out); err != nil || !st.IsDir() {
		return bad("--out %q is not a directory", *out)
	}
	ix := strconv.Itoa(*index)
	for i := range files {
		files[i].Key = strings.ReplaceAll(files[i].Key, "{index}", ix)
		files[i].Name = strings.ReplaceAll(files[i].Name, "{index}", ix)
	}
	if *api == "" {
		host, port := getenv("KUBERNETES_SERVICE_HOST"), getenv("KUBERNETES_SERVICE_PORT")
		if host == "" || port == "" {
			return bad("no --api and KUBERNETES_SERVICE_HOST/PORT are unset (%q, %q): not in a pod?", host, port)
		}
		*api = "https://" + net.JoinHostPort(host, port)
	}
	ns, err := os.ReadFile(filepath.Join(*creds, "namespace"))
	if err != nil {
		return bad("namespace of the pod: %v", err)
	}
	client, err := NewClient(filepath.Join(*creds, "ca.crt"))
	if err != nil {
		return err
	}
	return Fetch(ctx, Options{API: *api, Client: client, TokenFile: filepath.Join(*creds, "token"),
		Namespace: strings.TrimSpace(string(ns)), Secret: strings.ReplaceAll(*secret, "{index}", ix),
		Files: files, Out: *out, Timeout: *timeout, Backoff: 250 * time.Millisecond, MaxBackoff: 10 * time.Second,
		Logger: log.With("satellite", *index)})
}

// NewClient is an HTTPS client of the API server trusting caFile (PEM), with
// a per-request timeout and no proxy.
func NewClient(caFile string) (*http.Client, error) {
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("API server CA: %v: %w", err, errs.ErrInvalid)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("API server CA %s holds no PEM certificate: %w", caFile, errs.ErrInvalid)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}, nil
}
