package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/satpage/satpage/services/internal/errs"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		role    Role
		args    []string
		env     map[string]string
		host    string
		check   func(Config) string
		wantErr string
	}{
		{"the index comes from the hostname's ordinal", Satnode, nil, nil, "satpage-sat-17",
			func(c Config) string { return check(c.Index, 17) }, ""},
		{"environment variables set values", Satnode, nil,
			map[string]string{"SATPAGE_INDEX": "3", "SATPAGE_LISTEN": "127.0.0.1:7003", "SATPAGE_STOP_TIMEOUT": "2s", "SATPAGE_STORE": "memory"}, "h",
			func(c Config) string {
				return check(c.Index, 3) + check(c.Listen, "127.0.0.1:7003") + check(c.StopTimeout, 2*time.Second) + check(c.Store, "memory")
			}, ""},
		{"flags win over the environment", Satnode, []string{"--index", "4"}, map[string]string{"SATPAGE_INDEX": "3"}, "h",
			func(c Config) string { return check(c.Index, 4) }, ""},
		{"the peer template fills index and port", Gateway, []string{"--peer-template", "sat-{index}:{port}", "--peer-port-base", "8000"}, nil, "gw",
			func(c Config) string { return check(c.PeerAddr(12), "sat-12:8012") }, ""},
		{"the gateway needs no index", Gateway, nil, nil, "gateway", func(c Config) string { return "" }, ""},
		{"a satnode without an index fails naming it", Satnode, nil, nil, "laptop", nil, "--index -1"},
		{"an index beyond the constellation", Satnode, []string{"--index", "150"}, nil, "h", nil, "--index 150 outside [0, 150)"},
		{"a bad constellation", Gateway, []string{"--constellation", "walker:7/2/1:500:87"}, nil, "h", nil, "P = 2 does not divide T = 7"},
		{"a bad store", Satnode, []string{"--index", "1", "--store", "disk"}, nil, "h", nil, `--store "disk"`},
		{"a bad environment value", Satnode, nil, map[string]string{"SATPAGE_PEER_PORT_BASE": "many"}, "h", nil, `SATPAGE_PEER_PORT_BASE="many"`},
		{"ports that do not fit", Gateway, []string{"--peer-port-base", "65500"}, nil, "h", nil, "--peer-port-base 65500"},
		{"a page size too large", Gateway, []string{"--page-bytes", "99999999"}, nil, "h", nil, "--page-bytes 99999999"},
		{"a negative wait for Redis", Satnode, []string{"--index", "1", "--redis-wait", "-1s"}, nil, "h", nil, "--redis-wait -1s"},
		{"the wait for Redis from the environment", Satnode, []string{"--index", "1"}, map[string]string{"SATPAGE_REDIS_WAIT": "5m"}, "h",
			func(c Config) string { return check(c.RedisWait, 5*time.Minute) }, ""},
		{"the store cache from the environment", Satnode, []string{"--index", "1"}, map[string]string{"SATPAGE_STORE_CACHE_MIB": "0"}, "h",
			func(c Config) string { return check(c.StoreCacheMiB, 0) }, ""},
		{"a negative store cache", Satnode, []string{"--index", "1", "--store-cache-mib", "-1"}, nil, "h", nil, "--store-cache-mib -1"},
		{"the held wait from the environment", Satnode, []string{"--index", "1"}, map[string]string{"SATPAGE_HELD_WAIT": "250ms"}, "h",
			func(c Config) string { return check(c.HeldWait, 250*time.Millisecond) }, ""},
		{"a held wait of zero", Satnode, []string{"--index", "1", "--held-wait", "0s"}, nil, "h", nil, "--held-wait 0s"},
		{"a stray argument", Gateway, []string{"extra"}, nil, "h", nil, `"extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(tt.role, tt.args, env(tt.env), tt.host, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if msg := tt.check(c); msg != "" {
				t.Error(msg)
			}
		})
	}
}

func check[T comparable](got, want T) string {
	if got != want {
		return fmt.Sprintf("got %v, want %v; ", got, want)
	}
	return ""
}

func TestDefaultConfigIsValidForTheGatewayAndErrorsAreInvalid(t *testing.T) {
	if err := DefaultConfig().Validate(Gateway); err != nil {
		t.Errorf("DefaultConfig().Validate(Gateway): got %v, want nil", err)
	}
	err := DefaultConfig().Validate(Satnode)
	if !errors.Is(err, errs.ErrInvalid) {
		t.Errorf("a satnode with no index: got %v, want ErrInvalid", err)
	}
}

func TestAnISLScheduleIsReadAndItsErrorsNameTheFlag(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "s.json")
	body := `{"format": "satpage-isl-schedule/1", "constellation": "walker-star:150/10/1:500:87", "step_ns": 60000000000, "snapshots": 2, "high": [[0, 1, 2]]}`
	if err := os.WriteFile(good, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(Satnode, []string{"--index", "0", "--isl-schedule", good}, func(string) string { return "" }, "", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	g, err := c.Grid()
	if err != nil {
		t.Fatal(err)
	}
	if up0, up1 := g.IsNeighbor(0, 15, 0), g.IsNeighbor(0, 15, 60e9); !up0 || up1 {
		t.Errorf("link 0-15 up at snapshot 0: %v, at 1: %v; want true, false", up0, up1)
	}
	c.ISLSchedule = filepath.Join(dir, "nope.json")
	if _, err := c.Grid(); err == nil || !strings.Contains(err.Error(), "--isl-schedule") || !strings.Contains(err.Error(), "nope.json") {
		t.Errorf("missing schedule: got %v, want an error naming the flag and the file", err)
	}
}
