#!/usr/bin/env bash
# gen-replaces.sh prints the replace block for go.mod: every staging module that
# k8s.io/kubernetes replaces with a local path, pointed at its published version.
# k8s.io/sample-cli-plugin is skipped: the proxy refuses it and nothing uses it.
set -euo pipefail
kube_version=${1:?usage: gen-replaces.sh v1.36.3}
staging_version=v0.${kube_version#v1.}
modfile=$(go mod download -json "k8s.io/kubernetes@${kube_version}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
echo 'replace ('
sed -n '/^replace (/,/^)/p' "$modfile" | grep '=>' | grep -v sample-cli-plugin |
	awk -v v="$staging_version" '{print "\t" $1 " => " $1 " " v}'
echo ')'
