#!/usr/bin/env bash
# apt-ensure.sh PKG...: install the Debian packages among PKG that are not installed yet
# (one `apt-get update` first, only when something is missing). Idempotent: with every
# package present it changes nothing and needs no network. Used by the end-to-end
# targets so that they run on a fresh Debian 12 machine (scripts/e2e-k8s.sh,
# scripts/docker-engine.sh).
set -euo pipefail
(($#)) || { echo "usage: $0 PKG..." >&2; exit 2; }
missing=()
for p in "$@"; do
	[[ $p =~ ^[a-z0-9][a-z0-9+.-]+$ ]] || { echo "apt-ensure: error: bad package name '$p'" >&2; exit 2; }
	dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
((${#missing[@]})) || exit 0
[[ $(id -u) == 0 ]] || { echo "apt-ensure: error: installing ${missing[*]} needs root" >&2; exit 2; }
echo "apt-ensure: apt-get install ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "apt-ensure: installed ${missing[*]}" >&2
