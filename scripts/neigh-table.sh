#!/usr/bin/env bash
# The node's IPv4 neighbour (ARP) table for a run of many pods on one node.
#
#   neigh-table.sh raise FILE     remember the limits in FILE, then raise them (never lower)
#   neigh-table.sh restore FILE   put back the limits FILE holds, and remove it
#
# Linux keeps one neighbour table for every network namespace of the machine, with a
# hard limit of gc_thresh3 entries (1024 by default). With 150 satellite pods on one
# node, the node holds an entry per pod (kubelet's probes) and each pod one per peer
# it reaches directly (its ISL neighbours, the satellites of its plane asked at its
# restore, the gateways): about 3,000 entries at the start. Past the limit the kernel
# logs "neighbour: arp_cache: neighbor table overflow!" and drops the packets that
# needed a new entry: in a make e2e-k8s run the pods started after the table filled
# could not reach the gateway's certificate signer (their satnodes restarted after
# minutes of timeouts), and 35 pods were still not Ready 422 s after helm install;
# raised then, all 150 were Ready 8 s later (docs/deploy.md, "Where the start goes").
set -euo pipefail
want=(1024 4096 8192) # gc_thresh1 (no garbage collection below), 2 (soft), 3 (hard)
case ${1:-} in
raise)
	file=${2:?FILE}
	[[ -f $file ]] || for i in 1 2 3; do
		k=net/ipv4/neigh/default/gc_thresh$i
		echo "$k $(cat /proc/sys/$k)"
	done >"$file"
	for i in 1 2 3; do
		k=/proc/sys/net/ipv4/neigh/default/gc_thresh$i
		(($(cat "$k") < want[i - 1])) && echo "${want[i - 1]}" >"$k"
	done
	;;
restore)
	file=${2:?FILE}
	[[ -f $file ]] || exit 0
	while read -r k v; do echo "$v" >"/proc/sys/$k"; done <"$file"
	rm -f "$file"
	;;
*)
	echo "usage: $0 raise|restore FILE" >&2
	exit 2
	;;
esac
