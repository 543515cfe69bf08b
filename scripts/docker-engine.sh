#!/usr/bin/env bash
# Start Docker Engine for a test run and put the machine back afterwards.
#
#   docker-engine.sh up     install Debian's docker.io and iptables if missing; start dockerd
#                           unless an engine already answers (then nothing is recorded and
#                           `down` leaves that engine alone)
#   docker-engine.sh down   stop the dockerd that `up` started, then remove what it leaves
#                           behind: its bridges (docker0, docker_gwbridge, br-*), its iptables
#                           chains and rules, and restore ip_forward, the bridge netfilter
#                           sysctls and the FORWARD policy to what they were before `up`
#
# State (what `up` started, the sysctls before): $SATPAGE_DOCKER_STATE (/run/satpage-docker).
# No systemd here: dockerd runs as a plain background process with its own containerd.
set -euo pipefail
STATE=${SATPAGE_DOCKER_STATE:-/run/satpage-docker}
HERE=$(cd "$(dirname "$0")" && pwd)
DOCKER=${DOCKER:-$(command -v /usr/bin/docker || command -v docker || echo docker)}
log() { echo "docker-engine: $*" >&2; }

sysctl_get() { cat "/proc/sys/${1//.//}" 2>/dev/null || echo absent; }
sysctl_set() { [[ $2 == absent ]] || echo "$2" >"/proc/sys/${1//.//}" 2>/dev/null || true; }
SYSCTLS=(net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables)

up() {
	if "$DOCKER" info >/dev/null 2>&1; then
		log "an engine already answers: using it, will not stop it"
		return 0
	fi
	[[ $(id -u) == 0 ]] || { log "error: starting dockerd needs root"; exit 2; }
	# Debian's engine (dockerd, containerd, runc) and iptables, the guard's tool.
	command -v dockerd >/dev/null || bash "$HERE/apt-ensure.sh" docker.io
	bash "$HERE/apt-ensure.sh" iptables
	mkdir -p "$STATE"
	: >"$STATE/sysctl"
	for s in "${SYSCTLS[@]}"; do echo "$s $(sysctl_get "$s")" >>"$STATE/sysctl"; done
	iptables -S FORWARD | head -n1 | awk '{print $3}' >"$STATE/forward-policy"
	ip -o link show type bridge | awk -F': ' '{print $2}' | sort >"$STATE/bridges-before"
	bash "$HERE/nft-empty-tables.sh" snapshot "$STATE/nft-tables-before"
	log "starting dockerd (log: $STATE/dockerd.log)"
	# setsid: dockerd outlives this script and its process group (make, the e2e traps).
	# DOCKER_SERVICE_PREFER_OFFLINE_IMAGE: Swarm tasks use the local image instead of
	# first trying a registry (satpage.local is no registry; nothing may leave the host).
	DOCKER_SERVICE_PREFER_OFFLINE_IMAGE=1 setsid dockerd --host unix:///var/run/docker.sock --pidfile "$STATE/dockerd.pid" \
		>"$STATE/dockerd.log" 2>&1 </dev/null &
	for _ in $(seq 120); do
		"$DOCKER" info >/dev/null 2>&1 && { touch "$STATE/started"; log "dockerd is up"; return 0; }
		sleep 0.5
	done
	log "error: dockerd did not answer within 60 s; last lines of its log:"
	tail -n 20 "$STATE/dockerd.log" >&2
	touch "$STATE/started"
	down
	exit 1
}

down() {
	if [[ ! -f $STATE/started ]]; then
		log "dockerd was not started by up: leaving it alone"
		return 0
	fi
	local pid
	pid=$(cat "$STATE/dockerd.pid" 2>/dev/null || true)
	if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
		log "stopping dockerd (pid $pid)"
		kill -TERM "$pid"
		for _ in $(seq 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
		kill -0 "$pid" 2>/dev/null && { log "dockerd ignored SIGTERM for 60 s: SIGKILL"; kill -KILL "$pid"; sleep 1; }
	fi
	# Bridges dockerd made (the ones absent before up).
	local b
	for b in $(comm -13 "$STATE/bridges-before" <(ip -o link show type bridge | awk -F': ' '{print $2}' | sort)); do
		case $b in docker0 | docker_gwbridge | br-*) ip link delete "$b" 2>/dev/null && log "removed bridge $b" ;; esac
	done
	# iptables: every rule that jumps to or names a Docker chain or bridge, then the chains.
	local t rule chain
	for t in filter nat mangle; do
		while read -r rule; do
			eval "iptables -t $t ${rule/#-A/-D}" 2>/dev/null || true
		done < <(iptables-save -t "$t" 2>/dev/null | grep -E '^-A ' | grep -E 'DOCKER|docker0|docker_gwbridge|br-[0-9a-f]{12}|SATPAGE-SWARM' || true)
		for chain in $(iptables-save -t "$t" 2>/dev/null | sed -n 's/^:\(DOCKER[A-Z0-9_-]*\|SATPAGE-SWARM[A-Z0-9_-]*\) .*/\1/p'); do
			iptables -t "$t" -F "$chain" 2>/dev/null || true
			iptables -t "$t" -X "$chain" 2>/dev/null || true
		done
	done
	local s v
	while read -r s v; do sysctl_set "$s" "$v"; done <"$STATE/sysctl"
	iptables -P FORWARD "$(cat "$STATE/forward-policy")"
	# iptables-nft tables that did not exist before and hold no rule now.
	bash "$HERE/nft-empty-tables.sh" remove "$STATE/nft-tables-before"
	# Network namespaces and mounts dockerd may leave after a hard stop.
	if mount | grep -q ' /run/docker/netns/\| /var/run/docker/netns/'; then
		mount | awk '/\/run\/docker\/netns\//{print $3}' | xargs -r -n1 umount -l 2>/dev/null || true
	fi
	rm -f "$STATE/started"
	log "dockerd stopped; bridges, iptables rules and sysctls restored"
}

case ${1:-} in
up) up ;;
down) down ;;
*) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
