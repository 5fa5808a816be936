#!/usr/bin/env bash
# install-debian-packages.sh PACKAGE... installs the Debian packages that are
# missing (apt-get, as root on Debian); elsewhere it prints what to install.
set -euo pipefail
missing=()
for pkg in "$@"; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if (( ${#missing[@]} == 0 )); then
	exit 0
fi
if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
	echo ">> installing Debian packages: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# Packaged services must not start: the tests start their own servers on
	# loopback ports in temporary directories.
	policy=/usr/sbin/policy-rc.d
	created_policy=false
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created_policy=true
	fi
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	if $created_policy; then rm -f "$policy"; fi
	exit 0
fi
echo "missing Debian packages: ${missing[*]}" >&2
echo "install them with: sudo apt-get install ${missing[*]}" >&2
exit 1
