#!/usr/bin/env bash
# Remove the nftables tables that a test run's daemons created (iptables-nft creates a
# table on first use and leaves it, empty, behind): every table listed now but not in
# BEFORE_FILE (`nft list tables` taken before the run) that holds no rule.
# Usage: nft-empty-tables.sh snapshot FILE | remove FILE
set -euo pipefail
command -v nft >/dev/null || exit 0
case ${1:-} in
snapshot) { nft list tables 2>/dev/null || true; } | sort >"$2" ;;
remove)
	[[ -f $2 ]] || exit 0
	while read -r _ fam name; do
		[[ -n $name ]] || continue
		# Rules carry "# handle N" in `nft -a`; table and chain lines do too.
		if ! nft -a list table "$fam" "$name" 2>/dev/null | grep '# handle' | grep -qvE '^\s*(table|chain) '; then
			nft delete table "$fam" "$name" 2>/dev/null && echo "removed empty nft table $fam $name" >&2
		fi
	done < <(comm -13 "$2" <({ nft list tables 2>/dev/null || true; } | sort))
	;;
*) echo "usage: $0 snapshot FILE | remove FILE" >&2; exit 2 ;;
esac
