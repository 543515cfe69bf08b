// Package config holds the settings of satnode and gateway: DefaultConfig,
// Validate, and Load from flags and SATPAGE_* environment variables (flags
// win). services/README.md lists the contract; the container images, the
// local cluster, the Swarm stack and the Helm chart rely on these names.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/errs"
)

// Role is the binary a configuration is for.
type Role string

const (
	Satnode Role = "satnode"
	Gateway Role = "gateway"
)

// Config is every setting of both daemons (the gateway ignores the node-only ones).
type Config struct {
	Index         int           // satellite index; -1 = from the hostname's ordinal suffix
	Constellation string        // Walker spec
	ISLSchedule   string        // schedule file of a latitude cut-off ("": time-invariant +Grid)
	Listen        string        // gRPC (API, health, reflection)
	MetricsListen string        // Prometheus /metrics; "" or "off" disables
	RedisAddr     string        // this satellite's Redis: host:port or a Unix socket path
	RedisWait     time.Duration // how long start-up waits for Redis to answer
	Store         string        // redis | memory
	PeerTemplate  string        // address of satellite i: {index} -> i, {port} -> PeerPortBase + i
	PeerPortBase  int
	PageBytes     int           // largest page accepted
	Replicas      int           // R: copies of every page and page-table entry (docs/faults.md)
	Generation    string        // the deployment generation every satellite of one deployment shares (docs/faults.md)
	StopTimeout   time.Duration // graceful stop, then force
	RPCTimeout    time.Duration // deadline the gateway gives a request that has none
	LogLevel      string        // debug | info | warn | error
	LogFormat     string        // json | text

	// Security (docs/security.md).
	TLSDir             string        // TLS material: ca.pem, <role>.pem, <role>-key.pem, token keys
	Insecure           bool          // plain text, no checks: debugging only (warns at every start)
	Reflection         bool          // serve gRPC reflection (to callers with a certificate)
	Pprof              bool          // serve /debug/pprof on the metrics port
	HealthListen       string        // plain-text gRPC health only (kubelet probes); "" or "off": none
	TokenTTL           time.Duration // lifetime of the session tokens the gateway issues
	SigningKey         string        // gateway: token signing key ("": <tls-dir>/token-signing-key.pem)
	VerifyKeys         string        // token verification keys ("": <tls-dir>/token-verify-keys.pem)
	MaxTablePages      int           // largest page table a session may register (and the default)
	MaxPagesPerRequest int           // pages (accesses, table entries) in one request
	MaxMessageMiB      int           // largest gRPC message received or sent
	MaxStreams         int           // concurrent RPCs per connection
	RateLimit          float64       // requests/s per caller (clients; satellites and gateway exempt); 0: off
	RateBurst          int           // token-bucket depth of RateLimit
	SessionIdle        time.Duration // gateway: a session idle this long is ended; 0: never
	StoreQuota         float64       // satnode: refuse new frames above this fraction of Redis maxmemory; 0: off
	StoreCacheMiB      int           // satnode: page tables and recent frames held in memory in front of Redis; 0: off
	HeldWait           time.Duration // satnode: longest a read fault answered before its adopt is stored stays held

	// The in-cluster certificate signer (docs/security.md, "Keys that stay in their pod").
	CertSigner      string        // satnode: host:port of the signer; "": the TLS directory holds the pair
	CertSignerToken string        // satnode: the projected token whose audience is the signer's
	CertSignerCA    string        // satnode: the constellation CA the signer is checked with (and written to the TLS directory)
	CertSignerWait  time.Duration // satnode: how long start-up waits for the signer
	SignerListen    string        // gateway: the signer's address; "" or "off": no signer
	SignerCAKey     string        // gateway: the CA's private key ("": <tls-dir>/ca-key.pem)
	SignerAudience  string        // gateway: the audience a satellite's token must name
	SignerAccount   string        // gateway: the satellites' ServiceAccount, namespace:name
	SignerPods      string        // gateway: the satellites' StatefulSet (pod <name>-<i> is satellite i)
	SignerDNSNames  string        // gateway: comma-separated names besides satellite-<i>.satpage, {index} for i
	SignerCertTTL   time.Duration // gateway: lifetime of the certificates it signs

	// Live mode (docs/live.md); the gateway is live when Ephemeris is set.
	Ephemeris  string  // satpage-ephemeris/1 file from orbit_model ("": replay only)
	Epoch      string  // RFC 3339 t = 0 ("": the ephemeris' epoch)
	ClockStart string  // RFC 3339 wall instant from which the clock runs at Speed ("": the epoch)
	Speed      float64 // constellation seconds per wall second
	// PushLead: push-ahead copies a visit's pages to the next serving satellite this
	// long (constellation time) before the handover; 0: at the handover.
	PushLead time.Duration

	// Link emulation (docs/emulation.md).
	EmulateLinks    bool          // relayed hops and the ground link wait the sky's delays
	LinkEphemeris   string        // positions that time the links ("": Ephemeris)
	ISLCapacityGbps float64       // capacity of every directed ISL (network.isl_capacity_gbps)
	PerHopMs        float64       // on-board processing per ISL hop, each way (network.per_hop_processing_ms)
	SubstrateEvery  time.Duration // how often the machine's own per-hop time is measured again
}

// LinkPositions is the ephemeris file that times the links ("": links are not
// emulated: off, or no ephemeris given).
func (c Config) LinkPositions() string {
	switch {
	case !c.EmulateLinks:
		return ""
	case c.LinkEphemeris != "":
		return c.LinkEphemeris
	}
	return c.Ephemeris
}

// DefaultConfig is the documented defaults (services/README.md).
func DefaultConfig() Config {
	return Config{
		Index:              -1,
		Constellation:      "walker-star:150/10/1:500:87",
		Listen:             ":7000",
		MetricsListen:      ":9100",
		RedisAddr:          "127.0.0.1:6379",
		RedisWait:          2 * time.Minute,
		Store:              "redis",
		PeerTemplate:       "127.0.0.1:{port}",
		PeerPortBase:       7000,
		PageBytes:          4096,
		Replicas:           1,
		StopTimeout:        10 * time.Second,
		RPCTimeout:         30 * time.Second,
		LogLevel:           "info",
		LogFormat:          "json",
		TLSDir:             "/etc/satpage/tls",
		HealthListen:       "off",
		TokenTTL:           24 * time.Hour,
		MaxTablePages:      4096,
		MaxPagesPerRequest: 65536,
		MaxMessageMiB:      32,
		MaxStreams:         256,
		RateLimit:          2000,
		RateBurst:          400,
		SessionIdle:        time.Hour,
		StoreQuota:         0.8,
		StoreCacheMiB:      16,
		HeldWait:           time.Second,
		CertSignerToken:    "/var/run/secrets/satpage-signer/token",
		CertSignerCA:       "/etc/satpage-ca/ca.pem",
		CertSignerWait:     5 * time.Minute,
		SignerListen:       "off",
		SignerAudience:     "satpage-signer",
		SignerCertTTL:      365 * 24 * time.Hour,
		Speed:              1,
		PushLead:           10 * time.Second,
		EmulateLinks:       true,
		ISLCapacityGbps:    100,
		PerHopMs:           0.1,
		SubstrateEvery:     10 * time.Second,
	}
}

// MaxPageBytes bounds --page-bytes below gRPC's default 4 MiB message limit.
const MaxPageBytes = 1 << 20

// Validate checks the settings a role uses and names each bad value.
func (c Config) Validate(role Role) error {
	var problems []error
	bad := func(format string, a ...any) {
		problems = append(problems, fmt.Errorf(format+": %w", append(a, errs.ErrInvalid)...))
	}
	spec, err := constellation.ParseSpec(c.Constellation)
	if err != nil {
		problems = append(problems, fmt.Errorf("--constellation: %w", err))
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		bad("--listen %q is not host:port", c.Listen)
	}
	if c.MetricsListen != "" && c.MetricsListen != "off" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			bad("--metrics-listen %q is not host:port (or off)", c.MetricsListen)
		}
	}
	if !strings.Contains(c.PeerTemplate, "{index}") && !strings.Contains(c.PeerTemplate, "{port}") {
		bad("--peer-template %q names neither {index} nor {port}", c.PeerTemplate)
	}
	if c.PeerPortBase < 0 || c.PeerPortBase+spec.Satellites > 65536 {
		bad("--peer-port-base %d: ports up to %d do not fit in 1..65535", c.PeerPortBase, c.PeerPortBase+spec.Satellites-1)
	}
	if c.PageBytes < 1 || c.PageBytes > MaxPageBytes {
		bad("--page-bytes %d outside [1, %d]", c.PageBytes, MaxPageBytes)
	}
	per := 0
	if spec.Planes > 0 {
		per = spec.PerPlane()
	}
	if c.Replicas < 1 || (per > 0 && c.Replicas > per) {
		bad("--replicas %d outside [1, %d] (satellites per plane)", c.Replicas, per)
	}
	if c.StopTimeout <= 0 {
		bad("--stop-timeout %v is not positive", c.StopTimeout)
	}
	if c.RedisWait < 0 {
		bad("--redis-wait %v is negative", c.RedisWait)
	}
	if c.RPCTimeout <= 0 {
		bad("--rpc-timeout %v is not positive", c.RPCTimeout)
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.LogLevel)); err != nil {
		bad("--log-level %q is not debug, info, warn or error", c.LogLevel)
	}
	if c.LogFormat != "json" && c.LogFormat != "text" {
		bad("--log-format %q is not json or text", c.LogFormat)
	}
	if !c.Insecure && c.TLSDir == "" {
		bad("--tls-dir is empty (give the TLS material, or --insecure for debugging)")
	}
	if c.HealthListen != "" && c.HealthListen != "off" {
		if _, _, err := net.SplitHostPort(c.HealthListen); err != nil {
			bad("--health-listen %q is not host:port (or off)", c.HealthListen)
		}
	}
	if c.TokenTTL < time.Second {
		bad("--token-ttl %v is under a second", c.TokenTTL)
	}
	if c.MaxTablePages < 1 || c.MaxTablePages > 1<<24 {
		bad("--max-table-pages %d outside [1, %d]", c.MaxTablePages, 1<<24)
	}
	if c.MaxPagesPerRequest < 1 || c.MaxPagesPerRequest > 1<<20 {
		bad("--max-pages-per-request %d outside [1, %d]", c.MaxPagesPerRequest, 1<<20)
	}
	if c.MaxMessageMiB < 1 || c.MaxMessageMiB > 1024 {
		bad("--max-message-mib %d outside [1, 1024]", c.MaxMessageMiB)
	}
	if c.MaxStreams < 1 {
		bad("--max-streams %d is not positive", c.MaxStreams)
	}
	if c.RateLimit < 0 || c.RateBurst < 1 {
		bad("--rate-limit %v must be >= 0 and --rate-burst %d >= 1", c.RateLimit, c.RateBurst)
	}
	if c.SessionIdle < 0 {
		bad("--session-idle %v is negative", c.SessionIdle)
	}
	if c.StoreQuota < 0 || c.StoreQuota > 0.95 {
		bad("--store-quota %v outside [0, 0.95]", c.StoreQuota)
	}
	if c.StoreCacheMiB < 0 || c.StoreCacheMiB > 4096 {
		bad("--store-cache-mib %d outside [0, 4096]", c.StoreCacheMiB)
	}
	if c.HeldWait <= 0 {
		bad("--held-wait %v is not positive", c.HeldWait)
	}
	if c.PushLead < 0 || c.PushLead > time.Hour {
		bad("--push-lead %v is outside 0..1h", c.PushLead)
	}
	if !(c.ISLCapacityGbps > 0 && c.ISLCapacityGbps <= 1e6) {
		bad("--isl-capacity-gbps %v is not above 0 and at most 1e6", c.ISLCapacityGbps)
	}
	if !(c.PerHopMs >= 0 && c.PerHopMs <= 1000) {
		bad("--per-hop-processing-ms %v is outside 0..1000", c.PerHopMs)
	}
	if c.SubstrateEvery < 100*time.Millisecond {
		bad("--substrate-every %v is under 100ms", c.SubstrateEvery)
	}
	if !(c.Speed > 0 && c.Speed <= 1e6) {
		bad("--speed %v is not above 0 and at most 1e6", c.Speed)
	}
	for _, f := range []struct{ name, v string }{{"--epoch", c.Epoch}, {"--clock-start", c.ClockStart}} {
		if _, err := parseTime(f.v); err != nil {
			bad("%s %q is not an RFC 3339 time (2026-01-01T00:00:00Z)", f.name, f.v)
		}
	}
	if c.CertSigner != "" {
		if _, _, err := net.SplitHostPort(c.CertSigner); err != nil {
			bad("--cert-signer %q is not host:port", c.CertSigner)
		}
		if c.Insecure {
			bad("--cert-signer %q with --insecure: there is no TLS to get a certificate for", c.CertSigner)
		}
		if c.CertSignerWait <= 0 {
			bad("--cert-signer-wait %v is not positive", c.CertSignerWait)
		}
	}
	if role == Gateway && c.SignerListen != "" && c.SignerListen != "off" {
		if _, _, err := net.SplitHostPort(c.SignerListen); err != nil {
			bad("--signer-listen %q is not host:port (or off)", c.SignerListen)
		}
		if c.Insecure {
			bad("--signer-listen %q with --insecure: the signer needs the gateway's TLS material", c.SignerListen)
		}
		if ns, name, ok := strings.Cut(c.SignerAccount, ":"); !ok || ns == "" || name == "" {
			bad("--signer-service-account %q is not namespace:name", c.SignerAccount)
		}
		if c.SignerPods == "" || c.SignerAudience == "" {
			bad("--signer-statefulset (%q) and --signer-audience (%q) are required with --signer-listen", c.SignerPods, c.SignerAudience)
		}
		if c.SignerCertTTL < time.Hour {
			bad("--signer-cert-ttl %v is under an hour", c.SignerCertTTL)
		}
	}
	if role == Satnode {
		if c.Index < 0 || (spec.Satellites > 0 && c.Index >= spec.Satellites) {
			bad("--index %d outside [0, %d)", c.Index, spec.Satellites)
		}
		switch c.Store {
		case "redis":
			if c.RedisAddr == "" {
				bad("--redis is empty")
			}
		case "memory":
		default:
			bad("--store %q is not redis or memory", c.Store)
		}
	}
	return errors.Join(problems...)
}

// Spec is the parsed constellation (call after Validate).
func (c Config) Spec() constellation.Spec {
	s, _ := constellation.ParseSpec(c.Constellation)
	return s
}

// Grid is the ISL topology: the constellation's +Grid, time-varying when an ISL
// schedule is set (its errors name the file).
func (c Config) Grid() (*constellation.Grid, error) {
	g, err := constellation.NewGrid(c.Spec())
	if err != nil || c.ISLSchedule == "" {
		return g, err
	}
	s, err := constellation.ReadSchedule(c.ISLSchedule, c.Spec())
	if err != nil {
		return nil, fmt.Errorf("--isl-schedule: %w", err)
	}
	return g.WithSchedule(s)
}

// parseTime reads an RFC 3339 time ("" is the zero time).
func parseTime(v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339Nano, v)
}

// ClockTimes are Epoch and ClockStart parsed (zero when unset; call after Validate).
func (c Config) ClockTimes() (epoch, start time.Time) {
	epoch, _ = parseTime(c.Epoch)
	start, _ = parseTime(c.ClockStart)
	return epoch, start
}

// PeerAddr is the gRPC address of satellite i.
func (c Config) PeerAddr(i uint32) string {
	r := strings.NewReplacer("{index}", strconv.FormatUint(uint64(i), 10),
		"{port}", strconv.Itoa(c.PeerPortBase+int(i)))
	return r.Replace(c.PeerTemplate)
}

// SlogLevel is LogLevel parsed (info when invalid).
func (c Config) SlogLevel() slog.Level {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return slog.LevelInfo
	}
	return lvl
}

var ordinal = regexp.MustCompile(`-(\d+)$`)

// IndexFromHostname is the ordinal suffix of a StatefulSet-style hostname
// ("satpage-sat-17" -> 17), or -1.
func IndexFromHostname(host string) int {
	m := ordinal.FindStringSubmatch(host)
	if m == nil {
		return -1
	}
	i, err := strconv.Atoi(m[1])
	if err != nil {
		return -1
	}
	return i
}

// setting is one row of the contract: flag name, environment variable, help.
type setting struct {
	flag, env, help string
	bind            func(fs *flag.FlagSet, c *Config, name, help string)
}

func str(p func(*Config) *string) func(*flag.FlagSet, *Config, string, string) {
	return func(fs *flag.FlagSet, c *Config, name, help string) { fs.StringVar(p(c), name, *p(c), help) }
}

func num(p func(*Config) *int) func(*flag.FlagSet, *Config, string, string) {
	return func(fs *flag.FlagSet, c *Config, name, help string) { fs.IntVar(p(c), name, *p(c), help) }
}

func boolean(p func(*Config) *bool) func(*flag.FlagSet, *Config, string, string) {
	return func(fs *flag.FlagSet, c *Config, name, help string) { fs.BoolVar(p(c), name, *p(c), help) }
}

func float(p func(*Config) *float64) func(*flag.FlagSet, *Config, string, string) {
	return func(fs *flag.FlagSet, c *Config, name, help string) { fs.Float64Var(p(c), name, *p(c), help) }
}

func dur(p func(*Config) *time.Duration) func(*flag.FlagSet, *Config, string, string) {
	return func(fs *flag.FlagSet, c *Config, name, help string) { fs.DurationVar(p(c), name, *p(c), help) }
}

var settings = []setting{
	{"index", "SATPAGE_INDEX", "this satellite's index p*S + k (default: ordinal suffix of the hostname)", num(func(c *Config) *int { return &c.Index })},
	{"constellation", "SATPAGE_CONSTELLATION", "constellation spec walker[-star]:T/P/F:ALT_KM:INC_DEG", str(func(c *Config) *string { return &c.Constellation })},
	{"isl-schedule", "SATPAGE_ISL_SCHEDULE", "ISL schedule file of a latitude cut-off (satpage-isl-schedule/1; empty: time-invariant +Grid)", str(func(c *Config) *string { return &c.ISLSchedule })},
	{"listen", "SATPAGE_LISTEN", "gRPC address (API, health, reflection)", str(func(c *Config) *string { return &c.Listen })},
	{"metrics-listen", "SATPAGE_METRICS_LISTEN", "Prometheus /metrics address (off disables)", str(func(c *Config) *string { return &c.MetricsListen })},
	{"redis", "SATPAGE_REDIS_ADDR", "this satellite's Redis: host:port or a Unix socket path", str(func(c *Config) *string { return &c.RedisAddr })},
	{"redis-wait", "SATPAGE_REDIS_WAIT", "how long start-up waits for Redis to answer (its name may not resolve yet: Swarm, a pod's sidecar) before it fails", dur(func(c *Config) *time.Duration { return &c.RedisWait })},
	{"store", "SATPAGE_STORE", "page store: redis or memory", str(func(c *Config) *string { return &c.Store })},
	{"peer-template", "SATPAGE_PEER_TEMPLATE", "address of satellite i: {index} is i, {port} is peer-port-base + i", str(func(c *Config) *string { return &c.PeerTemplate })},
	{"peer-port-base", "SATPAGE_PEER_PORT_BASE", "see peer-template", num(func(c *Config) *int { return &c.PeerPortBase })},
	{"page-bytes", "SATPAGE_PAGE_BYTES", "largest page accepted, bytes", num(func(c *Config) *int { return &c.PageBytes })},
	{"generation", "SATPAGE_GENERATION", "deployment generation, the same at every satellite of one deployment and kept across its restarts and upgrades: a first start of it waits on no silent peer (docs/faults.md)", str(func(c *Config) *string { return &c.Generation })},
	{"replicas", "SATPAGE_REPLICAS", "replication factor R: every page is also held by the R-1 satellites behind its owner in its plane (docs/faults.md)", num(func(c *Config) *int { return &c.Replicas })},
	{"stop-timeout", "SATPAGE_STOP_TIMEOUT", "graceful stop before forcing", dur(func(c *Config) *time.Duration { return &c.StopTimeout })},
	{"rpc-timeout", "SATPAGE_RPC_TIMEOUT", "deadline given to requests that carry none", dur(func(c *Config) *time.Duration { return &c.RPCTimeout })},
	{"log-level", "SATPAGE_LOG_LEVEL", "debug, info, warn or error", str(func(c *Config) *string { return &c.LogLevel })},
	{"log-format", "SATPAGE_LOG_FORMAT", "json or text", str(func(c *Config) *string { return &c.LogFormat })},
	{"ephemeris", "SATPAGE_EPHEMERIS", "live mode: ephemeris file from orbit_model (satpage-ephemeris/1; empty: replay only)", str(func(c *Config) *string { return &c.Ephemeris })},
	{"epoch", "SATPAGE_EPOCH", "live mode: constellation clock epoch, RFC 3339 (empty: the ephemeris' epoch)", str(func(c *Config) *string { return &c.Epoch })},
	{"clock-start", "SATPAGE_CLOCK_START", "live mode: wall instant from which the clock runs at --speed, RFC 3339 (empty: the epoch)", str(func(c *Config) *string { return &c.ClockStart })},
	{"speed", "SATPAGE_SPEED", "live mode: constellation seconds per wall second", float(func(c *Config) *float64 { return &c.Speed })},
	{"push-lead", "SATPAGE_PUSH_LEAD", "live mode: push-ahead copies pages to the next serving satellite this long (constellation time) before the handover (0: at the handover)", dur(func(c *Config) *time.Duration { return &c.PushLead })},
	{"emulate-links", "SATPAGE_EMULATE_LINKS", "link emulation: relayed hops wait their ISL's delay and the gateway the ground link's, from the link ephemeris (docs/emulation.md; false: off)", boolean(func(c *Config) *bool { return &c.EmulateLinks })},
	{"link-ephemeris", "SATPAGE_LINK_EPHEMERIS", "ephemeris whose positions time the links (satpage-ephemeris/1; empty: --ephemeris; neither: not emulated)", str(func(c *Config) *string { return &c.LinkEphemeris })},
	{"isl-capacity-gbps", "SATPAGE_ISL_CAPACITY_GBPS", "capacity of every directed ISL, Gbit/s (a message waits its serialisation behind the others, FIFO)", float(func(c *Config) *float64 { return &c.ISLCapacityGbps })},
	{"per-hop-processing-ms", "SATPAGE_PER_HOP_PROCESSING_MS", "on-board processing each emulated ISL hop adds, each way, ms (the engine's network.per_hop_processing_ms; the machine's own is subtracted)", float(func(c *Config) *float64 { return &c.PerHopMs })},
	{"substrate-every", "SATPAGE_SUBSTRATE_EVERY", "how often the machine's own one-hop time is measured again (subtracted from every emulated wait)", dur(func(c *Config) *time.Duration { return &c.SubstrateEvery })},
	{"tls-dir", "SATPAGE_TLS_DIR", "TLS material (ca.pem, satellite-<i>.pem, gateway.pem, token keys; docs/security.md)", str(func(c *Config) *string { return &c.TLSDir })},
	{"insecure", "SATPAGE_INSECURE", "plain text and no access control: debugging only", boolean(func(c *Config) *bool { return &c.Insecure })},
	{"reflection", "SATPAGE_REFLECTION", "serve gRPC server reflection (to callers with a certificate)", boolean(func(c *Config) *bool { return &c.Reflection })},
	{"pprof", "SATPAGE_PPROF", "serve /debug/pprof on the metrics port", boolean(func(c *Config) *bool { return &c.Pprof })},
	{"health-listen", "SATPAGE_HEALTH_LISTEN", "plain-text gRPC health service only, for kubelet probes (off disables)", str(func(c *Config) *string { return &c.HealthListen })},
	{"token-ttl", "SATPAGE_TOKEN_TTL", "gateway: lifetime of the session tokens it issues", dur(func(c *Config) *time.Duration { return &c.TokenTTL })},
	{"token-signing-key", "SATPAGE_TOKEN_SIGNING_KEY", "gateway: Ed25519 token signing key (default <tls-dir>/token-signing-key.pem)", str(func(c *Config) *string { return &c.SigningKey })},
	{"token-verify-keys", "SATPAGE_TOKEN_VERIFY_KEYS", "Ed25519 token verification keys, PEM (default <tls-dir>/token-verify-keys.pem)", str(func(c *Config) *string { return &c.VerifyKeys })},
	{"max-table-pages", "SATPAGE_MAX_TABLE_PAGES", "largest page table a session may register (and the default)", num(func(c *Config) *int { return &c.MaxTablePages })},
	{"max-pages-per-request", "SATPAGE_MAX_PAGES_PER_REQUEST", "pages (ReadPages accesses, FetchPages/ReleasePages pages, AcceptTable entries) in one request", num(func(c *Config) *int { return &c.MaxPagesPerRequest })},
	{"max-message-mib", "SATPAGE_MAX_MESSAGE_MIB", "largest gRPC message received or sent, MiB", num(func(c *Config) *int { return &c.MaxMessageMiB })},
	{"max-streams", "SATPAGE_MAX_STREAMS", "concurrent RPCs per connection", num(func(c *Config) *int { return &c.MaxStreams })},
	{"rate-limit", "SATPAGE_RATE_LIMIT", "requests/s per client (token bucket; satellites and gateway exempt; 0 off)", float(func(c *Config) *float64 { return &c.RateLimit })},
	{"rate-burst", "SATPAGE_RATE_BURST", "token-bucket depth of --rate-limit", num(func(c *Config) *int { return &c.RateBurst })},
	{"session-idle", "SATPAGE_SESSION_IDLE", "gateway: end a session idle this long (0 never)", dur(func(c *Config) *time.Duration { return &c.SessionIdle })},
	{"store-quota", "SATPAGE_STORE_QUOTA", "satnode: refuse new page frames above this fraction of Redis maxmemory (0 off)", float(func(c *Config) *float64 { return &c.StoreQuota })},
	{"store-cache-mib", "SATPAGE_STORE_CACHE_MIB", "satnode: MiB of page tables and recently stored frames held in memory in front of Redis, written through (0 off)", num(func(c *Config) *int { return &c.StoreCacheMiB })},
	{"held-wait", "SATPAGE_HELD_WAIT", "satnode: longest a read fault answered before its adopt is stored stays held: the session's held faults are stored, and their old owners released, with its next 64 moved pages or this long after the first of them, whichever comes first", dur(func(c *Config) *time.Duration { return &c.HeldWait })},
	{"cert-signer", "SATPAGE_CERT_SIGNER", "satnode: host:port of the in-cluster certificate signer; at start the satnode makes its own key and gets its certificate there into --tls-dir (empty: --tls-dir holds the pair; docs/security.md)", str(func(c *Config) *string { return &c.CertSigner })},
	{"cert-signer-token", "SATPAGE_CERT_SIGNER_TOKEN", "satnode: the projected ServiceAccount token, audience the signer's, it proves its pod with", str(func(c *Config) *string { return &c.CertSignerToken })},
	{"cert-signer-ca", "SATPAGE_CERT_SIGNER_CA", "satnode: the constellation CA (PEM) the signer is checked against, written to --tls-dir as ca.pem", str(func(c *Config) *string { return &c.CertSignerCA })},
	{"cert-signer-wait", "SATPAGE_CERT_SIGNER_WAIT", "satnode: how long start-up tries again while the signer does not answer", dur(func(c *Config) *time.Duration { return &c.CertSignerWait })},
	{"signer-listen", "SATPAGE_SIGNER_LISTEN", "gateway: serve the certificate signer here, TLS with the gateway's certificate (off disables)", str(func(c *Config) *string { return &c.SignerListen })},
	{"signer-ca-key", "SATPAGE_SIGNER_CA_KEY", "gateway: the constellation CA's private key the signer signs with (default <tls-dir>/ca-key.pem)", str(func(c *Config) *string { return &c.SignerCAKey })},
	{"signer-audience", "SATPAGE_SIGNER_AUDIENCE", "gateway: the audience a satellite's token must be for", str(func(c *Config) *string { return &c.SignerAudience })},
	{"signer-service-account", "SATPAGE_SIGNER_SERVICE_ACCOUNT", "gateway: the satellites' ServiceAccount, namespace:name; tokens of any other are refused", str(func(c *Config) *string { return &c.SignerAccount })},
	{"signer-statefulset", "SATPAGE_SIGNER_STATEFULSET", "gateway: the satellites' StatefulSet: the token of pod <name>-<i> gets satellite i's certificate", str(func(c *Config) *string { return &c.SignerPods })},
	{"signer-dns-names", "SATPAGE_SIGNER_DNS_NAMES", "gateway: comma-separated DNS names a satellite's certificate holds besides satellite-<i>.satpage, {index} standing for i", str(func(c *Config) *string { return &c.SignerDNSNames })},
	{"signer-cert-ttl", "SATPAGE_SIGNER_CERT_TTL", "gateway: lifetime of the certificates the signer issues (cut to the CA's)", dur(func(c *Config) *time.Duration { return &c.SignerCertTTL })},
}

// Load reads the environment (getenv), then the flags in args (flags win),
// derives the index from hostname when unset, and validates for role.
func Load(role Role, args []string, getenv func(string) string, hostname string, usage io.Writer) (Config, error) {
	c := DefaultConfig()
	var envErrs []error
	for _, s := range settings {
		v := getenv(s.env)
		if v == "" {
			continue
		}
		fs := flag.NewFlagSet("env", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		s.bind(fs, &c, s.flag, s.help)
		if err := fs.Set(s.flag, v); err != nil {
			envErrs = append(envErrs, fmt.Errorf("%s=%q: %v: %w", s.env, v, err, errs.ErrInvalid))
		}
	}
	if err := errors.Join(envErrs...); err != nil {
		return c, err
	}
	fs := flag.NewFlagSet(string(role), flag.ContinueOnError)
	fs.SetOutput(usage)
	for _, s := range settings {
		s.bind(fs, &c, s.flag, s.help+" (env "+s.env+")")
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q: %w", fs.Arg(0), errs.ErrInvalid)
	}
	if c.Index < 0 {
		c.Index = IndexFromHostname(hostname)
	}
	return c, c.Validate(role)
}
