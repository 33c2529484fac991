#!/usr/bin/env bash
# Regenerates tools/localcluster/kubernetes/go.mod (and go.sum) for another
# Kubernetes release:   tools/localcluster/gen-kubernetes-mod.sh v1.34.4
#
# k8s.io/kubernetes's go.mod requires its k8s.io/* staging modules at v0.0.0
# and replaces them with ./staging/src/k8s.io/<name>, which does not exist when
# k8s.io/kubernetes is a dependency. For every staging module it requires, the
# wrapper requires AND replaces it with the published v0.<minor>.<patch>.
# Then delete the cached build (or run `tools/local-cluster install --force`).
set -euo pipefail

K="${1:?usage: $0 vMAJOR.MINOR.PATCH (a k8s.io/kubernetes release)}"
[[ "$K" =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { echo "not a release version: $K" >&2; exit 1; }
S="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/kubernetes"

modfile="$("$GO" mod download -json "k8s.io/kubernetes@$K" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
[[ -f "$modfile" ]] || { echo "cannot download k8s.io/kubernetes@$K" >&2; exit 1; }
gover="$(awk '$1 == "go" {print $2; exit}' "$modfile")"
mods=()
while read -r m; do
    grep -qE "^[[:space:]]+$m v0\.0\.0" "$modfile" && mods+=("$m")
done < <(grep -oE '^[[:space:]]+k8s\.io/[a-z0-9-]+ => \./staging' "$modfile" | awk '{print $1}')
echo "k8s.io/kubernetes $K (go $gover): ${#mods[@]} staging modules at $S" >&2

{
    echo "// Wrapper module pinning the Kubernetes binaries built by tools/local-cluster."
    echo "// k8s.io/kubernetes replaces its k8s.io/* staging modules with local paths"
    echo "// (./staging/...) that do not exist when it is a dependency, so each staging"
    echo "// module it requires is required AND replaced here with its published v0.X.Y"
    echo "// of the same release. Regenerate with tools/localcluster/gen-kubernetes-mod.sh."
    echo "module agent-sandbox.local/tools/localcluster/kubernetes"
    echo
    echo "go $gover"
    echo
    echo "require k8s.io/kubernetes $K"
    echo
    echo "require ("
    for m in "${mods[@]}"; do printf '\t%s %s\n' "$m" "$S"; done
    echo ")"
    echo
    echo "replace ("
    for m in "${mods[@]}"; do printf '\t%s => %s %s\n' "$m" "$m" "$S"; done
    echo ")"
} >"$DIR/go.mod"
rm -f "$DIR/go.sum"
(cd "$DIR" && "$GO" mod tidy)
echo "wrote $DIR/go.mod and go.sum" >&2
