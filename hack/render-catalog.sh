#!/usr/bin/env bash
# render-catalog.sh OPM BUNDLE_DIR OUT_DIR BUNDLE_IMAGE DEFAULT_CHANNEL CHANNELS
# writes the file-based catalog of the dbpilot package to OUT_DIR/index.yaml:
# the package (opm init), the bundle rendered from its directory (opm render,
# offline) with the image it is published as, and one entry per channel.
set -euo pipefail
opm=$1 bundle=$2 out=$3 image=$4 default_channel=$5 channels=$6
repo_root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
rendered=$("$opm" render "$bundle" --output yaml)
name=$(sed -n 's/^name: //p' <<<"$rendered" | head -n1)
{
	"$opm" init dbpilot --default-channel="$default_channel" \
		--icon="$repo_root/config/manifests/icon.svg" --output yaml
	# A bundle rendered from a directory has no image; the catalog points at
	# the bundle image it is published as.
	sed "s#^image: \"\"#image: ${image}#" <<<"$rendered"
	IFS=, read -ra names <<<"$channels"
	for channel in "${names[@]}"; do
		printf -- '---\nschema: olm.channel\npackage: dbpilot\nname: %s\nentries:\n- name: %s\n' "$channel" "$name"
	done
} >"$out/index.yaml"
echo "catalog written to $out/index.yaml ($name in channels $channels, default $default_channel)"
