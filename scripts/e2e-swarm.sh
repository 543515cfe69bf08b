#!/usr/bin/env bash
# make e2e-swarm: the satpage constellation (150 satellites by default) on a real
# single-node Docker Swarm with mutual TLS (Docker secrets) and replication factor 2,
# replayed through its gateway, counts checked against the engine, then replayed again
# while a whole satellite (its satnode and its Redis containers) is killed: every session
# and access is answered (the gateway's failover; movements differ from the engine's
# failure-free run by its stand-ins and are printed) and no page is lost; last, the
# deterministic check: the satellite holding the most pages killed at a scenario time
# while the sessions wait: nothing lost, counts equal to the engine's. Installs Debian's docker.io when
# missing, starts Docker Engine and the swarm when they are not running and leaves
# the machine as it found it (docker-engine.sh down: bridges, iptables, sysctls).
#
# Network: every service is endpoint_mode dnsrr on one overlay network (no IPVS in
# this kernel: no service VIPs, no routing mesh). Before deploying, the chain
# SATPAGE-SWARM-GUARD (first in DOCKER-USER) refuses whatever a container sends out of
# its bridge, so containers reach only each other, and every new connection from
# another interface into a container; an INPUT rule keeps the gateway's host-mode
# port (it binds every host address) to loopback. Replay traffic: 127.0.0.1 only.
#
# Environment: SEED (1), E2E_SWARM_CONSTELLATION (walker-star:150/10/1:500:87),
# SWARM_GATEWAY_PORT (a free loopback port, booked), E2E_TIMEOUT_S (900), E2E_KEEP=1 (leave the stack up),
# E2E_REPLICAS (2: the replication factor; with 1 the kill step loses pages),
# E2E_COMPARE_ARGS (the short compare scenario).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SEED=${SEED:-1}
SPEC=${E2E_SWARM_CONSTELLATION:-walker-star:150/10/1:500:87}
TIMEOUT=${E2E_TIMEOUT_S:-900}
REPLICAS=${E2E_REPLICAS:-2}
# Wall seconds a replay waits once a killed satellite serves again, before its next
# request: the others hold it dead until their next probe reaches it (a dead satellite
# is probed every 2 s with a 2 s timeout; a name that failed is looked up again within
# 1 s, and gRPC reconnects within 1 s: liveness.RecheckMax, peers.NameRetry), and route
# around it meanwhile, at more hops than the engine, which has it back at once.
SETTLE_S=6
STACK=satpage
OUT=$ROOT/build/e2e-swarm
SATPAGE=$ROOT/.venv/bin/satpage
PY=$ROOT/.venv/bin/python
# The gateway's local port: booked like a local cluster's (satpage.cluster.local.free_port_base),
# since a fixed one collided with a cluster another user had started on the default 17000.
PORT=${SWARM_GATEWAY_PORT:-$("$PY" -c 'from satpage.cluster.local import free_port_base; print(free_port_base(0))')}
DOCKER=${DOCKER:-$(command -v /usr/bin/docker || command -v docker || echo docker)}
export DOCKER
mkdir -p "$OUT"
log() { printf '%s e2e-swarm: %s\n' "$(date +%T)" "$*" >&2; }
die() { log "FAILED: $*"; exit 1; }

swarm_started=0
guard_up=0
cleanup() {
	local rc=$?
	set +e
	if [[ ${E2E_KEEP:-0} == 1 ]]; then log "E2E_KEEP=1: leaving stack, swarm and dockerd up"; return; fi
	if ((rc != 0)) && "$DOCKER" stack ls 2>/dev/null | grep -q "^$STACK "; then
		# every container's log (the killed ones too) before the stack goes
		rm -rf "$OUT/logs" && mkdir -p "$OUT/logs"
		"$DOCKER" ps -aq --filter "label=com.docker.stack.namespace=$STACK" |
			xargs -r -P 8 -I{} sh -c '"$1" logs --timestamps "$2" >"$3/$("$1" inspect -f "{{.Name}}" "$2" | tr -d /).log" 2>&1' _ "$DOCKER" {} "$OUT/logs"
		log "container logs at failure: $OUT/logs/"
	fi
	if "$DOCKER" stack ls 2>/dev/null | grep -q "^$STACK "; then
		log "removing stack $STACK"
		"$DOCKER" stack rm "$STACK" >/dev/null
		for _ in $(seq 120); do
			[[ -z $("$DOCKER" ps -aq --filter "label=com.docker.stack.namespace=$STACK") ]] && break
			sleep 1
		done
		# The overlay network goes once its last task has gone.
		for _ in $(seq 30); do
			"$DOCKER" network ls --format '{{.Name}}' | grep -q "^${STACK}_" || break
			sleep 1
		done
	fi
	if ((guard_up)); then guard down; fi
	if ((swarm_started)); then log "leaving the swarm this run created"; "$DOCKER" swarm leave --force >/dev/null; fi
	bash scripts/docker-engine.sh down
	bash scripts/neigh-table.sh restore "$OUT/neigh-table.orig"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

guard() { # up|down: SATPAGE-SWARM-GUARD in DOCKER-USER, INPUT rule for the gateway port
	local comment="satpage-swarm-guard"
	if [[ $1 == up ]]; then
		iptables -N SATPAGE-SWARM-GUARD 2>/dev/null || iptables -F SATPAGE-SWARM-GUARD
		local b
		for b in docker_gwbridge docker0; do
			iptables -A SATPAGE-SWARM-GUARD -i "$b" -o "$b" -j RETURN
			# A container's packet leaving its bridge for a host interface (eth0, ...): refused,
			# not dropped, so that what Docker's embedded DNS forwards upstream (names of
			# tasks not running yet, gRPC's TXT lookups) fails at once instead of after the
			# resolver's timeout, which held 150 satnodes' dials on a loaded machine.
			iptables -A SATPAGE-SWARM-GUARD -i "$b" -j REJECT
			iptables -A SATPAGE-SWARM-GUARD -o "$b" -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN
			# A new connection from another interface into a container (the published port): dropped.
			iptables -A SATPAGE-SWARM-GUARD -o "$b" -j DROP
		done
		iptables -I DOCKER-USER 1 -j SATPAGE-SWARM-GUARD
		# docker-proxy listens on every address for the host-mode ports (gateway, gateway-1): loopback only.
		iptables -I INPUT 1 -p tcp --dport "$PORT:$((PORT + 1))" ! -i lo -m comment --comment "$comment" -j DROP
		guard_up=1
		log "guard: DOCKER-USER -> SATPAGE-SWARM-GUARD; INPUT drops tcp/$PORT-$((PORT + 1)) except on lo"
	else
		iptables -D DOCKER-USER -j SATPAGE-SWARM-GUARD 2>/dev/null
		iptables -F SATPAGE-SWARM-GUARD 2>/dev/null
		iptables -X SATPAGE-SWARM-GUARD 2>/dev/null
		iptables -D INPUT -p tcp --dport "$PORT:$((PORT + 1))" ! -i lo -m comment --comment "$comment" -j DROP 2>/dev/null
		guard_up=0
		log "guard removed"
	fi
}

mem_used_mb() { free -m | awk '/^Mem:/{print $3}'; }

# 1. Docker Engine and the swarm (started only when absent; cleanup stops only those).
# 302 containers on one machine need more neighbour entries than Linux's default 1024
# (scripts/neigh-table.sh); restored at the end.
bash scripts/neigh-table.sh raise "$OUT/neigh-table.orig"
bash scripts/docker-engine.sh up
state=$("$DOCKER" info -f '{{.Swarm.LocalNodeState}}')
if [[ $state != active ]]; then
	# A 60 s dispatcher heartbeat: with the default 5 s, a loaded machine (301 containers
	# starting, health checks, other work) missed heartbeats, the manager marked its own
	# node down and shut every task down to reschedule it (run of 2026-11-24 00:19).
	log "docker swarm init --advertise-addr 127.0.0.1 --dispatcher-heartbeat 60s"
	"$DOCKER" swarm init --advertise-addr 127.0.0.1 --dispatcher-heartbeat 60s >/dev/null
	swarm_started=1
fi

# 2. Images (the same staged binaries the Kubernetes test packs), built by Docker.
IMAGE_BUILDER=docker bash scripts/build-images.sh | tee "$OUT/images.txt"
VERSION=$(sed -n 's/^__version__ = "\(.*\)"/\1/p' sim/satpage/__init__.py)

# 3. Guard, then the stack.
guard up
"$SATPAGE" deploy stack --constellation "$SPEC" --tag "$VERSION" --gateway-port "$PORT" --replicas "$REPLICAS" \
	--out "$OUT/stack.yml"
# Link emulation (docs/emulation.md): a day of positions from the default scenario's epoch
# (the replays below use it), compressed, beside the stack file as a Docker config.
"$SATPAGE" deploy links --constellation "$SPEC" --hours 24 --out "$OUT/link-ephemeris.bin"
# Mutual TLS (docs/security.md): fresh material beside the stack file, as Docker secrets.
rm -rf "$OUT/tls"
"$SATPAGE" deploy tls --constellation "$SPEC" --out "$OUT/tls"
export SATPAGE_TLS_DIR="$OUT/tls"
TLS_PROBE=(-tls "-tls-ca-cert=$OUT/tls/ca.pem" -tls-server-name=gateway.satpage)
satellites=$("$PY" -c "from satpage.commands.deploy import satellite_count; print(satellite_count('$SPEC'))")
# What an earlier run killed before its clean-up left (the stack, its secrets) goes
# first: secrets cannot be updated in place, so the deploy would fail on them.
if "$DOCKER" stack ls --format '{{.Name}}' | grep -qx "$STACK"; then
	log "removing the stack an earlier run left behind"
	"$DOCKER" stack rm "$STACK" >/dev/null
	for _ in $(seq 300); do
		[[ -z $("$DOCKER" ps -aq --filter "label=com.docker.stack.namespace=$STACK") ]] && break
		sleep 1
	done
fi
stale=$("$DOCKER" secret ls -q --filter "label=com.docker.stack.namespace=$STACK")
if [[ -n $stale ]]; then
	log "removing $(wc -w <<<"$stale") secrets an earlier run left behind"
	# shellcheck disable=SC2086
	"$DOCKER" secret rm $stale >/dev/null
fi
mem0=$(mem_used_mb)
# A new deployment: a new generation (docs/faults.md), which the stack file reads.
export SATPAGE_GENERATION="e2e-$(date +%s)"
t0=$(date +%s.%N)
log "docker stack deploy: $satellites satellites ($SPEC), 2 services each, and the gateway; replicas $REPLICAS"
"$DOCKER" stack deploy --prune --resolve-image never -c "$OUT/stack.yml" "$STACK" >"$OUT/deploy.log"
t_deployed=$(date +%s.%N)

# 4. Wait until every satnode and the gateway report healthy (their HEALTHCHECK is
# grpc_health_probe on the standard health service).
# every gateway service of the stack (satpage deploy stack --gateways: gateway, gateway-1, ...)
gateways=$(grep -cE '^  gateway(-[0-9]+)?:$' "$OUT/stack.yml")
want=$((satellites + gateways))
deadline=$((SECONDS + TIMEOUT))
last=-1
while :; do
	healthy=$("$DOCKER" ps --filter "label=com.docker.stack.namespace=$STACK" --filter health=healthy -q | wc -l)
	if ((healthy != last)); then log "healthy: $healthy/$want"; last=$healthy; fi
	((healthy >= want)) && break
	if ((SECONDS > deadline)); then
		{ "$DOCKER" service ls --filter "label=com.docker.stack.namespace=$STACK" | grep -v ' 1/1 ' | head -20 >&2; } || true
		die "only $healthy of $want services healthy after ${TIMEOUT}s"
	fi
	sleep 2
done
t_healthy=$(date +%s.%N)
healthy_load=$(cut -d' ' -f1 /proc/loadavg)
mem1=$(mem_used_mb)
# Containers that Swarm started again during the start (a task that exited or was
# found unhealthy is replaced by a new one): tasks beyond one per service.
start_restarts=$(( $("$DOCKER" ps -aq --filter "label=com.docker.stack.namespace=$STACK" | wc -l) - want - satellites ))
log "healthy: $want/$want $(echo "$t_healthy $t0" | awk '{printf "%.1f", $1-$2}') s after the deploy; tasks started again: $start_restarts; load average $healthy_load"
# Idle cost once settled: the CPU the stack's containers use over 30 s with no request.
sleep 30
idle=$("$PY" scripts/idle-cpu.py --docker-stack "$STACK" --seconds 30) || die "idle CPU: $idle"
idle_cores=$("$PY" -c 'import json,sys; print(json.loads(sys.argv[1])["idle_cores"])' "$idle")
idle_load=$("$PY" -c 'import json,sys; print(json.loads(sys.argv[1])["load_1m"])' "$idle")
log "idle: the stack's containers used $idle_cores cores over 30 s ($idle)"
# Memory charged to the containers themselves (cgroup v1, cgroupfs driver: /docker/<id>).
ctr_mem_mb=$(cat /sys/fs/cgroup/memory/docker/memory.usage_in_bytes 2>/dev/null | awk '{printf "%d", $1/1048576}' || echo n/a)
tasks=$("$DOCKER" ps -q --filter "label=com.docker.stack.namespace=$STACK" | wc -l)

# 5. The gateway over loopback (docker-proxy; the guard keeps other addresses out).
target=127.0.0.1:$PORT
for _ in $(seq 30); do
	"$ROOT/.tools/bin/grpc_health_probe" -addr="$target" "${TLS_PROBE[@]}" -connect-timeout=2s >/dev/null 2>&1 && break
	sleep 1
done
"$ROOT/.tools/bin/grpc_health_probe" -addr="$target" "${TLS_PROBE[@]}" || die "gateway $target does not answer its health check"

# 6. Replays: paper (one run) and a short compare, engine vs cluster.
log "satpage paper --runs 1 --seed $SEED: engine"
"$SATPAGE" paper --runs 1 --seed "$SEED" --json >"$OUT/paper-engine.json"
log "satpage paper --runs 1 --seed $SEED: through the gateway at $target"
r0=$(date +%s.%N)
"$SATPAGE" paper --runs 1 --seed "$SEED" --backend cluster --target "$target" --json >"$OUT/paper-cluster.json"
r1=$(date +%s.%N)
"$PY" scripts/e2e-compare.py paper "$OUT/paper-engine.json" "$OUT/paper-cluster.json" | tee "$OUT/paper-check.txt"

read -ra COMPARE_ARGS <<<"${E2E_COMPARE_ARGS:---sessions 20 --strategies on-demand,proactive --set time.duration_s=300}"
# the engine's scenario on the deployed constellation (a smaller E2E_SWARM_CONSTELLATION too)
COMPARE_ARGS+=(--set "constellation.spec=$SPEC")
log "satpage compare ${COMPARE_ARGS[*]} --seed $SEED: engine"
"$SATPAGE" compare "${COMPARE_ARGS[@]}" --seed "$SEED" --json --failure-schedule "$OUT/failures.json" \
	>"$OUT/compare-engine.json"
log "satpage compare: through the gateway"
c0=$(date +%s.%N)
"$SATPAGE" compare "${COMPARE_ARGS[@]}" --seed "$SEED" --backend cluster --target "$target" --json >"$OUT/compare-cluster.json"
c1=$(date +%s.%N)
"$PY" scripts/e2e-compare.py compare "$OUT/compare-engine.json" "$OUT/compare-cluster.json" | tee "$OUT/compare-check.txt"

# 7. A whole satellite killed in the middle of the same replay: its satnode and its
# Redis containers (SIGKILL; the Redis data is a tmpfs, so its frames are gone). Swarm
# starts both again as new, empty tasks. The victim is the busiest satellite so far
# (its page-access counter, read from the metrics port at its docker_gwbridge address:
# the host reaches that directly, the guard only filters forwarded traffic).
compare_s=$(echo "$c1 $c0" | awk '{printf "%.2f", $1-$2}')
log "replaying again; killing the busiest satellite (satnode + redis) mid-replay"
"$SATPAGE" compare "${COMPARE_ARGS[@]}" --seed "$SEED" --backend cluster --target "$target" --json \
	>"$OUT/compare-kill.json" 2>"$OUT/compare-kill.err" &
replay_pid=$!
k0=$(date +%s.%N)
sleep "$(awk -v s="$compare_s" 'BEGIN{d=s/4; if (d<0.5) d=0.5; printf "%.2f", d}')"
kill -0 "$replay_pid" 2>/dev/null || die "the replay finished before the kill (it took ${compare_s}s before): lengthen E2E_COMPARE_ARGS"
victim=$("$PY" - "$STACK" "$DOCKER" <<'EOF'
import json, subprocess, sys, urllib.request
from concurrent.futures import ThreadPoolExecutor
stack, docker = sys.argv[1], [sys.argv[2]]
net = json.loads(subprocess.check_output(docker + ["network", "inspect", "docker_gwbridge"]))[0]["Containers"]
ip_of = {cid: c["IPv4Address"].split("/")[0] for cid, c in net.items()}
ids = subprocess.check_output(docker + ["ps", "-q", "--no-trunc", "--filter",
                                        f"label=com.docker.stack.namespace={stack}"]).decode().split()
info = json.loads(subprocess.check_output(docker + ["inspect"] + ids))
sats = [(c["Config"]["Labels"]["com.docker.swarm.service.name"].split("_", 1)[1], ip_of.get(c["Id"]))
        for c in info if "_sat-" in c["Config"]["Labels"].get("com.docker.swarm.service.name", "")]

def accesses(sat):
    name, ip = sat
    try:
        text = urllib.request.urlopen(f"http://{ip}:9100/metrics", timeout=3).read().decode()
    except (OSError, TypeError):
        return -1.0, name
    return sum(float(l.rsplit(" ", 1)[1]) for l in text.splitlines()
               if l.startswith("satpage_page_accesses_total")), name

with ThreadPoolExecutor(16) as pool:
    n, name = max(pool.map(accesses, sats))
print(f"{name} {n:.0f}" if n >= 0 else "")
EOF
)
[[ -n $victim ]] || die "no satellite answered on its metrics port"
victim_accesses=${victim#* } victim=${victim%% *}
idx=${victim#sat-}
cids=$("$DOCKER" ps -q --filter "label=com.docker.swarm.service.name=${STACK}_sat-$idx"; \
	"$DOCKER" ps -q --filter "label=com.docker.swarm.service.name=${STACK}_redis-$idx")
[[ $(wc -w <<<"$cids") == 2 ]] || die "expected 2 running containers of satellite $idx, found: $cids"
log "docker kill: satellite $idx (satnode and redis; $victim_accesses page accesses so far) at $(echo "$(date +%s.%N) $k0" | awk '{printf "%.1f", $1-$2}') s into the replay"
# shellcheck disable=SC2086
"$DOCKER" kill $cids >/dev/null
k_kill=$(date +%s.%N)
# Back: a new satnode task of sat-idx reports healthy (its first check runs 15 s after start).
back_s=n/a
for _ in $(seq 120); do
	new=$("$DOCKER" ps -q --filter "label=com.docker.swarm.service.name=${STACK}_sat-$idx" --filter health=healthy)
	if [[ -n $new ]] && ! grep -q "$new" <<<"$cids"; then
		back_s=$(echo "$(date +%s.%N) $k_kill" | awk '{printf "%.1f", $1-$2}')
		break
	fi
	sleep 1
done
log "satellite $idx: a new satnode task healthy $back_s s after the kill"
wait "$replay_pid" || { cat "$OUT/compare-kill.err" >&2; die "the replay did not survive the kill of satellite $idx"; }
kill_s=$(echo "$(date +%s.%N) $k0" | awk '{printf "%.2f", $1-$2}')
log "replay with the kill: $kill_s s (without: $compare_s s)"
"$PY" scripts/e2e-compare.py failover "$OUT/compare-engine.json" "$OUT/compare-kill.json" | tee "$OUT/kill-check.txt"
"$PY" scripts/e2e-compare.py lost "$OUT/compare-cluster.json" "$OUT/compare-kill.json" | tee "$OUT/kill-lost.txt"
pages_lost=$(sed -n 's/^pages_lost=//p' "$OUT/kill-lost.txt")

# 8. The same loss at a scenario time (the deterministic check): every session paused at
# half the run, the satellite holding the most of their page frames then killed
# (satnode and Redis), the replay going on once its new, empty task is healthy (it took
# its state back from its replicas). Nothing may be lost, and the counts must equal the
# engine's to the page-hop (`satpage cluster chaos --failure-schedule --target
# --kill-command`, docs/faults.md).
cat >"$OUT/kill-sat.sh" <<EOF
#!/usr/bin/env bash
# docker kill satellite \$1's satnode and Redis; return when a new satnode task is healthy.
set -euo pipefail
svc() { "$DOCKER" ps -q --filter "label=com.docker.swarm.service.name=${STACK}_\$1" "\${@:2}"; }
old=\$(svc sat-\$1; svc redis-\$1)
[[ \$(wc -w <<<"\$old") == 2 ]] || { echo "satellite \$1: expected 2 running containers, found: \$old" >&2; exit 1; }
"$DOCKER" kill \$old >/dev/null
for _ in \$(seq 240); do
	new=\$(svc sat-\$1 --filter health=healthy)
	if [[ -n \$new ]] && ! grep -q "\$new" <<<"\$old"; then exit 0; fi
	sleep 1
done
echo "satellite \$1: no new healthy satnode task 240 s after the kill" >&2
exit 1
EOF
chmod +x "$OUT/kill-sat.sh"
half_s=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["duration_ns"] / 2e9)' "$OUT/failures.json")
sleep "$SETTLE_S" # the kill before this one (the step above) settles too
log "replaying again, paused at scenario time $half_s s to kill the satellite holding the most pages"
s0=$(date +%s.%N)
"$SATPAGE" cluster chaos --failure-schedule "$OUT/failures.json" --target "$target" --replicas "$REPLICAS" \
	--kill-command "$OUT/kill-sat.sh {satellite}" --fail-busiest --fail-at "$half_s" --settle-s "$SETTLE_S" --json \
	>"$OUT/chaos-kill.json" 2>"$OUT/chaos-kill.err" || { cat "$OUT/chaos-kill.err" >&2; die "the scheduled kill replay failed"; }
sched_s=$(echo "$(date +%s.%N) $s0" | awk '{printf "%.1f", $1-$2}')
"$PY" scripts/e2e-compare.py scheduled "$OUT/chaos-kill.json" | tee "$OUT/scheduled-check.txt"
sched_victim=$(sed -n 's/^victims=//p' "$OUT/scheduled-check.txt")

# 9. What it cost.
"$PY" scripts/e2e-compare.py report swarm "$OUT" \
	"satellites=$satellites" "containers=$tasks" "replicas=$REPLICAS" \
	"deploy_s=$(echo "$t_deployed $t0" | awk '{printf "%.1f", $1-$2}')" \
	"healthy_s=$(echo "$t_healthy $t0" | awk '{printf "%.1f", $1-$2}')" \
	"start_restarts=$start_restarts" "idle_cores=$idle_cores" \
	"load_at_healthy=$healthy_load" "load_at_idle=$idle_load" \
	"mem_mb=$((mem1 - mem0))" "containers_mb=${ctr_mem_mb:-n/a}" \
	"paper_s=$(echo "$r1 $r0" | awk '{printf "%.2f", $1-$2}')" \
	"compare_s=$compare_s" "kill_victim=sat-$idx" "kill_back_s=$back_s" \
	"kill_replay_s=$kill_s" "pages_lost=$pages_lost" \
	"scheduled_kill_victims=$sched_victim" "scheduled_replay_s=$sched_s" | tee "$OUT/summary.txt"
log "PASSED"
