package podkeys_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/podkeys"
)

// fakeAPI answers GET /api/v1/namespaces/NS/secrets/NAME like kube-apiserver:
// the Secret's data base64-encoded, or a Status. Its first answers may be
// failures, as at install time.
type fakeAPI struct {
	token   string
	secrets map[string]map[string]string // "ns/name" -> key -> value

	mu       sync.Mutex // guards failures and asked
	failures []int      // status codes of the next answers
	asked    []string   // paths asked for
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.asked = append(f.asked, r.URL.Path)
	var fail int
	if len(f.failures) > 0 {
		fail, f.failures = f.failures[0], f.failures[1:]
	}
	f.mu.Unlock()
	status := func(code int, msg string) {
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "message": msg, "code": code})
	}
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		status(http.StatusUnauthorized, "Unauthorized")
		return
	}
	if fail != 0 {
		status(fail, "not yet")
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/v1/namespaces/")
	ns, name, _ := strings.Cut(rest, "/secrets/")
	s, found := f.secrets[ns+"/"+name]
	if r.Method != http.MethodGet || !ok || !found {
		status(http.StatusNotFound, `secrets "`+name+`" not found`)
		return
	}
	data := map[string]string{}
	for k, v := range s {
		data[k] = base64.StdEncoding.EncodeToString([]byte(v))
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Secret", "data": data})
}

// start serves api over TLS and writes a ServiceAccount credentials directory
// (token, ca.crt, namespace) for it.
func start(t *testing.T, api *fakeAPI, ns string) (url, creds string) {
	t.Helper()
	srv := httptest.NewTLSServer(api)
	t.Cleanup(srv.Close)
	creds = t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	for name, data := range map[string]string{"token": api.token + "\n", "ca.crt": string(ca), "namespace": ns} {
		if err := os.WriteFile(filepath.Join(creds, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return srv.URL, creds
}

func satelliteSecrets() map[string]map[string]string {
	return map[string]map[string]string{
		"sp/t-satpage-sat-16": {"tls.crt": "cert of 16", "tls.key": "key of 16", "ca.crt": "the CA"},
		"sp/t-satpage-sat-17": {"tls.crt": "cert of 17", "tls.key": "key of 17", "ca.crt": "the CA"},
	}
}

var satelliteArgs = []string{"--secret", "t-satpage-sat-{index}", "--file", "tls.crt=satellite-{index}.pem",
	"--file", "tls.key=satellite-{index}-key.pem", "--file", "ca.crt=ca.pem"}

func TestThePodWritesOnlyItsOwnSecretsFilesNamedForItsOrdinal(t *testing.T) {
	api := &fakeAPI{token: "tok", secrets: satelliteSecrets(), failures: []int{http.StatusForbidden, http.StatusNotFound}}
	url, creds := start(t, api, "sp")
	out := t.TempDir()
	args := append([]string{"--api", url, "--credentials", creds, "--out", out}, satelliteArgs...)
	if err := podkeys.Run(context.Background(), args, func(string) string { return "" }, "t-satpage-17",
		io.Discard, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("got %v, want the files after two refusals", err)
	}
	want := map[string]string{"satellite-17.pem": "cert of 17", "satellite-17-key.pem": "key of 17", "ca.pem": "the CA"}
	entries, _ := os.ReadDir(out)
	if len(entries) != len(want) {
		t.Errorf("got %d files in the directory, want exactly %d", len(entries), len(want))
	}
	for name, data := range want {
		got, err := os.ReadFile(filepath.Join(out, name))
		st, _ := os.Stat(filepath.Join(out, name))
		if err != nil || string(got) != data || st.Mode().Perm() != 0o400 {
			t.Errorf("%s: got %q (%v, mode %v), want %q mode 0400", name, got, err, st.Mode().Perm(), data)
		}
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	for _, p := range api.asked { // it never asked for another satellite's Secret
		if p != "/api/v1/namespaces/sp/secrets/t-satpage-sat-17" {
			t.Errorf("asked for %s, want only its own Secret", p)
		}
	}
	if len(api.asked) != 3 {
		t.Errorf("got %d requests, want 3 (403, 404, then the Secret)", len(api.asked))
	}
}

func TestAWrongTokenFailsAtOnceAndAMissingSecretWhenTheDeadlinePasses(t *testing.T) {
	api := &fakeAPI{token: "tok", secrets: satelliteSecrets()}
	url, creds := start(t, api, "sp")
	o := podkeys.Options{API: url, TokenFile: filepath.Join(creds, "token"), Namespace: "sp",
		Files: []podkeys.File{{Key: "tls.key", Name: "k.pem"}}, Out: t.TempDir(),
		Timeout: 300 * time.Millisecond, Backoff: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)}
	client, err := podkeys.NewClient(filepath.Join(creds, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	o.Client = client

	o.Secret = "t-satpage-sat-99"
	t0 := time.Now()
	err = podkeys.Fetch(context.Background(), o)
	if !errors.Is(err, errs.ErrUnavailable) || !strings.Contains(err.Error(), "sp/t-satpage-sat-99") ||
		!strings.Contains(err.Error(), "404") {
		t.Errorf("missing Secret: got %v, want unavailable naming it and the 404", err)
	}
	if d := time.Since(t0); d < 300*time.Millisecond || d > 2*time.Second {
		t.Errorf("gave up after %s, want about the 300 ms deadline", d)
	}

	if err := os.WriteFile(o.TokenFile, []byte("stolen"), 0o600); err != nil {
		t.Fatal(err)
	}
	o.Secret, o.Timeout = "t-satpage-sat-16", time.Minute
	t0 = time.Now()
	err = podkeys.Fetch(context.Background(), o)
	if !errors.Is(err, errs.ErrInvalid) || !strings.Contains(err.Error(), "401") || time.Since(t0) > 5*time.Second {
		t.Errorf("wrong token: got %v after %s, want an invalid-argument error at once naming the 401", err, time.Since(t0))
	}
	if entries, _ := os.ReadDir(o.Out); len(entries) != 0 {
		t.Errorf("got %d files after failures, want none", len(entries))
	}
}

func TestBadArgumentsAreRefusedNamingTheValue(t *testing.T) {
	out := t.TempDir()
	env := func(string) string { return "" }
	tests := []struct {
		name, host string
		args       []string
		want       string
	}{
		{"no ordinal", "satpage", append([]string{"--out", out}, satelliteArgs...), `hostname "satpage" has no ordinal suffix`},
		{"no secret", "t-satpage-3", []string{"--out", out, "--file", "a=b"}, `--secret ("")`},
		{"no files", "t-satpage-3", []string{"--out", out, "--secret", "s"}, "at least one --file"},
		{"bad file", "t-satpage-3", []string{"--out", out, "--secret", "s", "--file", "tls.key"}, `"tls.key" is not KEY=NAME`},
		{"path in file", "t-satpage-3", []string{"--out", out, "--secret", "s", "--file", "k=../x"}, `"k=../x" is not KEY=NAME`},
		{"out missing", "t-satpage-3", append([]string{"--out", filepath.Join(out, "nope")}, satelliteArgs...), "is not a directory"},
		{"not in a pod", "t-satpage-3", append([]string{"--out", out}, satelliteArgs...), "KUBERNETES_SERVICE_HOST/PORT are unset"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := podkeys.Run(context.Background(), tc.args, env, tc.host, io.Discard, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
