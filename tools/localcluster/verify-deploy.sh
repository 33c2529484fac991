#!/usr/bin/env bash
# shellcheck disable=SC2015,SC2016  # ok/bad always succeed; ${VAR} placeholders are literal
# Checks deploy/ (the Sandbox CRD, namespace, controller RBAC, Deployment and
# metrics Service, and deploy/install.yaml) against the
# real API server started by tools/local-cluster:
#   tools/local-cluster up && tools/localcluster/verify-deploy.sh
# Applies deploy/ with `kubectl apply -k`, then checks schema validation,
# defaults, the CEL rules, printer columns, the upstream example manifests
# (../shared/upstream-examples, placeholders filled in) and the RBAC identity.
# Leaves the CRD/RBAC installed and removes its test namespace.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
LC="$ROOT/tools/local-cluster"
EXAMPLES="${AGENT_SANDBOX_UPSTREAM_EXAMPLES:-$ROOT/../shared/upstream-examples}"
NS=verify-deploy
IMAGE=registry.k8s.io/pause:3.10
SA=system:serviceaccount:agent-sandbox-system:agent-sandbox-controller

pass=0 fail=0
ok()  { pass=$((pass + 1)); printf 'PASS %s\n' "$*"; }
bad() { fail=$((fail + 1)); printf 'FAIL %s\n' "$*"; }
kc()  { "$LC" kubectl "$@"; }

# expect_ok DESC CMD...  /  expect_reject DESC SUBSTRING CMD...
expect_ok() {
    local desc="$1" out; shift
    if out="$("$@" 2>&1)"; then ok "$desc"; else bad "$desc: $out"; fi
}
expect_reject() {
    local desc="$1" want="$2" out; shift 2
    if out="$("$@" 2>&1)"; then bad "$desc: was accepted"
    elif [[ "$out" == *"$want"* ]]; then ok "$desc (\"$want\")"
    else bad "$desc: rejected, but without \"$want\": $out"; fi
}

sandbox() { # NAME [SPEC_EXTRA_YAML]: a minimal Sandbox manifest
    cat <<EOF
apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata:
  name: $1
  namespace: $NS
spec:
  podTemplate:
    spec:
      containers:
      - name: c
        image: $IMAGE
${2:-}
EOF
}
# wh WANT JSONPATH OBJECT: a field of the object as the API server stored it
wh() {
    local want="$1" path="$2" obj="$3" got
    got="$(kc -n agent-sandbox-system get "$obj" -o jsonpath="{$path}" 2>&1)"
    [[ "$got" == "$want" ]] && ok "$obj $path = $want" || bad "$obj $path: got '$got', want '$want'"
}
apply_str() { kc apply -f - <<<"$1"; }
create_str() { kc create -f - <<<"$1"; }

"$LC" status >/dev/null || { echo "the local cluster is not up: run tools/local-cluster up" >&2; exit 1; }
# A controller run with --webhook-url (integration tests, local development)
# leaves each CRD's conversion clientConfig on a URL; `apply` would add the
# Service beside it, which the API server refuses: put the Service back first,
# on all four (the controller patches every CRD it converts).
for crd in sandboxes.agents.x-k8s.io sandboxclaims.extensions.agents.x-k8s.io \
           sandboxtemplates.extensions.agents.x-k8s.io sandboxwarmpools.extensions.agents.x-k8s.io; do
    if [[ -n "$(kc get crd "$crd" -o jsonpath='{.spec.conversion.webhook.clientConfig.url}' 2>/dev/null)" ]]; then
        kc patch crd "$crd" --type=merge -p '{"spec":{"conversion":{"webhook":{"clientConfig":{"url":null,"service":{"name":"agent-sandbox-webhook-service","namespace":"agent-sandbox-system","path":"/convert"}}}}}}' >/dev/null
    fi
done

echo "== deploy/"
kc kustomize "$ROOT/deploy" >/dev/null && ok "kubectl kustomize deploy/ renders" || bad "kubectl kustomize deploy/"
# (A server dry run of all of deploy/ on a fresh cluster fails by design: the
# namespace is not really created, so the namespaced ServiceAccount cannot be.)
expect_ok "kubectl apply --dry-run=server of the CRD" kc apply --dry-run=server -f "$ROOT/deploy/crds/agents.x-k8s.io_sandboxes.yaml"
expect_ok "kubectl apply -k deploy/" kc apply -k "$ROOT/deploy"
expect_ok "kubectl apply -k deploy/ --dry-run=server (again)" kc apply -k "$ROOT/deploy" --dry-run=server
expect_ok "CRD sandboxes.agents.x-k8s.io Established" \
    kc wait --for=condition=Established crd/sandboxes.agents.x-k8s.io --timeout=30s
kc delete namespace "$NS" --ignore-not-found --wait=true >/dev/null
kc create namespace "$NS" >/dev/null
# Discovery can lag right after the CRD is established.
for _ in $(seq 30); do kc get sandboxes -n "$NS" >/dev/null 2>&1 && break; sleep 1; done

echo "== controller Deployment and metrics Service (deploy/controller)"
expect_ok "Deployment: apply --dry-run=server" kc apply --dry-run=server -f "$ROOT/deploy/controller/deployment.yaml"
expect_ok "metrics Service: apply --dry-run=server" kc apply --dry-run=server -f "$ROOT/deploy/controller/service.yaml"
expect_ok "deploy/install.yaml: apply --dry-run=server" kc apply --dry-run=server -f "$ROOT/deploy/install.yaml"
expect_ok "deploy/install.yaml up to date with deploy/" "$ROOT/tools/gen-install-yaml" --check
# jp WANT JSONPATH [KIND/NAME]: the stored object's field, as the API server defaulted it
jp() {
    local want="$1" path="$2" obj="${3:-deployment/agent-sandbox-controller}" got
    got="$(kc -n agent-sandbox-system get "$obj" -o jsonpath="{$path}" 2>&1)"
    [[ "$got" == "$want" ]] && ok "$obj $path = $want" || bad "$obj $path: got '$got', want '$want'"
}
C='.spec.template.spec.containers[0]'
jp 1 .spec.replicas
jp agent-sandbox-controller .spec.template.spec.serviceAccountName
jp '{"app":"agent-sandbox-controller"}' .spec.selector.matchLabels
jp agent-sandbox-controller .spec.template.metadata.labels.app
jp agent-sandbox-controller "$C.name"
jp agent-sandbox-controller:dev "$C.image"
jp '["--leader-elect=true","--extensions=true"]' "$C.args"
jp 'metrics:8080 healthz:8081 webhook:9443 ' "range $C.ports[*]}{.name}:{.containerPort} {end"
jp '/healthz healthz 15 20' "$C.livenessProbe.httpGet.path} {$C.livenessProbe.httpGet.port} {$C.livenessProbe.initialDelaySeconds} {$C.livenessProbe.periodSeconds"
jp '/readyz healthz 5 10' "$C.readinessProbe.httpGet.path} {$C.readinessProbe.httpGet.port} {$C.readinessProbe.initialDelaySeconds} {$C.readinessProbe.periodSeconds"
[[ -n "$(kc -n agent-sandbox-system get deployment/agent-sandbox-controller -o jsonpath="{$C.resources.requests.cpu}{$C.resources.requests.memory}{$C.resources.limits.memory}")" ]] &&
    ok "resource requests and a memory limit set" || bad "resources missing"
jp true .spec.template.spec.securityContext.runAsNonRoot
jp RuntimeDefault .spec.template.spec.securityContext.seccompProfile.type
jp false "$C.securityContext.allowPrivilegeEscalation"
jp true "$C.securityContext.readOnlyRootFilesystem"
jp '["ALL"]' "$C.securityContext.capabilities.drop"
jp /tmp/k8s-webhook-server/serving-certs "$C.volumeMounts[0].mountPath"
jp '{}' .spec.template.spec.volumes[0].emptyDir
jp 'metrics 8080 metrics' '.spec.ports[0].name} {.spec.ports[0].port} {.spec.ports[0].targetPort' service/agent-sandbox-controller
jp '{"app":"agent-sandbox-controller"}' .spec.selector service/agent-sandbox-controller
# Pod Security "restricted": the controller's pod template is admitted in a
# namespace that enforces it (server-side dry run of a Pod made of the template)
kc delete namespace psa-restricted --ignore-not-found --wait=true >/dev/null
kc create namespace psa-restricted >/dev/null
kc label namespace psa-restricted pod-security.kubernetes.io/enforce=restricted >/dev/null
kc -n psa-restricted create serviceaccount agent-sandbox-controller >/dev/null
tmpl="$(kc -n agent-sandbox-system get deployment/agent-sandbox-controller -o jsonpath='{.spec.template.spec}')"
expect_ok "pod template admitted under Pod Security \"restricted\"" kc -n psa-restricted create --dry-run=server -f - \
    <<<"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"psa\"},\"spec\":$tmpl}"
expect_reject "a privileged variant is refused there (the check bites)" "violates PodSecurity" \
    kc -n psa-restricted create --dry-run=server -f - \
    <<<"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"psa\"},\"spec\":${tmpl/\"runAsNonRoot\":true/\"runAsNonRoot\":false}}"
kc delete namespace psa-restricted --wait=false >/dev/null
# kwok plays the kubelet: the pod "runs" without a process, but the rollout
# shows the scheduler and the Deployment controller accept the pod spec
expect_ok "Deployment rolls out (kwok)" kc -n agent-sandbox-system rollout status deployment/agent-sandbox-controller --timeout=60s

echo "== sandbox-router (deploy/router)"
RSA=system:serviceaccount:agent-sandbox-system:sandbox-router
kc kustomize "$ROOT/deploy/router" >/dev/null && ok "kubectl kustomize deploy/router renders" || bad "kubectl kustomize deploy/router"
expect_ok "deploy/router: apply --dry-run=server" kc apply -k "$ROOT/deploy/router" --dry-run=server
expect_ok "kubectl apply -k deploy/router" kc apply -k "$ROOT/deploy/router"
R='.spec.template.spec.containers[0]'
jp 2 .spec.replicas deployment/sandbox-router
jp sandbox-router .spec.template.spec.serviceAccountName deployment/sandbox-router
jp '["/sandbox-router"]' "$R.command" deployment/sandbox-router
jp 'proxy:8080 metrics:9090 healthz:8081 ' "range $R.ports[*]}{.name}:{.containerPort} {end" deployment/sandbox-router
jp '/healthz healthz /readyz healthz' "$R.livenessProbe.httpGet.path} {$R.livenessProbe.httpGet.port} {$R.readinessProbe.httpGet.path} {$R.readinessProbe.httpGet.port" deployment/sandbox-router
jp true "$R.securityContext.readOnlyRootFilesystem" deployment/sandbox-router
jp 'proxy 8080 proxy' '.spec.ports[0].name} {.spec.ports[0].port} {.spec.ports[0].targetPort' service/sandbox-router-svc
jp 1 .spec.minAvailable poddisruptionbudget/sandbox-router
for verb in get list watch; do
    for res in pods sandboxes.agents.x-k8s.io; do
        [[ "$(kc auth can-i --as="$RSA" "$verb" "$res" -A 2>/dev/null)" == yes ]] && ok "router can $verb $res" || bad "router cannot $verb $res"
    done
done
for res in tokenreviews.authentication.k8s.io subjectaccessreviews.authorization.k8s.io; do
    [[ "$(kc auth can-i --as="$RSA" create "$res" 2>/dev/null)" == yes ]] && ok "router can create $res" || bad "router cannot create $res"
done
for args in "create pods" "delete pods" "update sandboxes.agents.x-k8s.io" "get secrets" "list secrets" \
            "create pods --subresource=exec" "patch sandboxes.agents.x-k8s.io --subresource=status"; do
    # shellcheck disable=SC2086
    [[ "$(kc auth can-i --as="$RSA" $args -n "$NS" 2>/dev/null || true)" == no ]] && ok "router denied: $args" || bad "router allowed: $args"
done
expect_ok "sandbox-router rolls out (kwok)" kc -n agent-sandbox-system rollout status deployment/sandbox-router --timeout=60s

echo "== upstream examples (kind: Sandbox) from $EXAMPLES"
n=0
for f in "$EXAMPLES"/*.yaml; do
    grep -q '^kind: Sandbox$' "$f" || continue
    n=$((n + 1))
    m="$(sed -e "s|\${IMAGE}|$IMAGE|g" -e "s|\${SANDBOX_NAMESPACE}|$NS|g" \
             -e 's|\${SANDBOX_TEMPLATE_NAME}|example-template|g' \
             -e 's|\${SANDBOX_WARMPOOL_NAME}|example-pool|g' "$f")"
    expect_ok "$(basename "$f"): apply --dry-run=server" kc -n "$NS" apply --dry-run=server -f - <<<"$m"
    expect_ok "$(basename "$f"): apply" kc -n "$NS" apply -f - <<<"$m"
done
(( n > 0 )) && ok "$n upstream Sandbox manifests found" || bad "no upstream Sandbox manifest in $EXAMPLES"

echo "== upstream examples of the extension kinds from $EXAMPLES"
n=0
for kind in SandboxTemplate SandboxWarmPool SandboxClaim; do   # referents first
    for f in "$EXAMPLES"/*.yaml; do
        grep -q "^kind: $kind\$" "$f" || continue
        n=$((n + 1))
        m="$(sed -e "s|\${IMAGE}|$IMAGE|g" -e "s|\${SANDBOX_NAMESPACE}|$NS|g" -e "s|^  namespace: default$|  namespace: $NS|" \
                 -e 's|\${SANDBOX_TEMPLATE_NAME}|example-template|g' -e 's|\${SANDBOX_WARMPOOL_NAME}|example-pool|g' "$f")"
        expect_ok "$(basename "$f"): apply --dry-run=server" kc -n "$NS" apply --dry-run=server -f - <<<"$m"
    done
done
(( n >= 10 )) && ok "$n upstream extension manifests found" || bad "only $n upstream extension manifests in $EXAMPLES"
X=extensions.agents.x-k8s.io
for r in sandboxtemplates sandboxclaims sandboxwarmpools; do
    c="crd/$r.$X"
    wh 'true true' '.spec.versions[?(@.name=="v1beta1")].served} {.spec.versions[?(@.name=="v1beta1")].storage' "$c"
    wh 'true false true' '.spec.versions[?(@.name=="v1alpha1")].served} {.spec.versions[?(@.name=="v1alpha1")].storage} {.spec.versions[?(@.name=="v1alpha1")].deprecated' "$c"
    wh 'Webhook v1 v1beta1' '.spec.conversion.strategy} {.spec.conversion.webhook.conversionReviewVersions[0]} {.spec.conversion.webhook.conversionReviewVersions[1]' "$c"
done
wh 'sandboxwarmpool swp' '.spec.names.singular} {.spec.names.shortNames[0]' "crd/sandboxwarmpools.$X"
wh '.spec.replicas .status.replicas .status.selector' '.spec.versions[?(@.name=="v1beta1")].subresources.scale.specReplicasPath} {.spec.versions[?(@.name=="v1beta1")].subresources.scale.statusReplicasPath} {.spec.versions[?(@.name=="v1beta1")].subresources.scale.labelSelectorPath' "crd/sandboxwarmpools.$X"
# upstream's columns, and ours for RollingUpdate in -o wide only (priority 1)
wh 'Ready Desired Updated Age' '.spec.versions[?(@.name=="v1beta1")].additionalPrinterColumns[*].name' "crd/sandboxwarmpools.$X"
wh '1' '.spec.versions[?(@.name=="v1beta1")].additionalPrinterColumns[?(@.name=="Updated")].priority' "crd/sandboxwarmpools.$X"
wh 'Ready Sandbox Reason Age' '.spec.versions[?(@.name=="v1beta1")].additionalPrinterColumns[*].name' "crd/sandboxclaims.$X"
wh '' '.spec.versions[?(@.name=="v1beta1")].subresources' "crd/sandboxtemplates.$X"
tpl() { printf 'apiVersion: %s/v1beta1\nkind: SandboxTemplate\nmetadata: {name: %s}\nspec:\n  podTemplate: {spec: {containers: [{name: c, image: %s}]}}\n%s\n' "$X" "$1" "$IMAGE" "${2:-}"; }
pool() { printf 'apiVersion: %s/v1beta1\nkind: SandboxWarmPool\nmetadata: {name: %s}\nspec:\n%s\n' "$X" "$1" "$2"; }
claim() { printf 'apiVersion: %s/v1beta1\nkind: SandboxClaim\nmetadata: {name: %s}\nspec:\n%s\n' "$X" "$1" "$2"; }
expect_ok "minimal SandboxTemplate accepted" kc -n "$NS" apply --dry-run=server -f - <<<"$(tpl t1)"
expect_reject "template networkPolicyManagement enum" "Unsupported value" kc -n "$NS" apply --dry-run=server -f - <<<"$(tpl t2 '  networkPolicyManagement: Sometimes')"
expect_reject "template envVarsInjectionPolicy enum" "Unsupported value" kc -n "$NS" apply --dry-run=server -f - <<<"$(tpl t3 '  envVarsInjectionPolicy: Maybe')"
expect_reject "template podTemplate required" "spec.podTemplate: Required value" kc -n "$NS" apply --dry-run=server -f - <<<"apiVersion: $X/v1beta1
kind: SandboxTemplate
metadata: {name: t4}
spec: {}"
expect_ok "minimal SandboxWarmPool accepted" kc -n "$NS" apply --dry-run=server -f - <<<"$(pool p1 '  sandboxTemplateRef: {name: t1}')"
expect_reject "pool replicas >= 0" "should be greater than or equal to 0" kc -n "$NS" apply --dry-run=server -f - <<<"$(pool p2 '  replicas: -1
  sandboxTemplateRef: {name: t1}')"
expect_reject "pool sandboxTemplateRef required" "sandboxTemplateRef: Required value" kc -n "$NS" apply --dry-run=server -f - <<<"$(pool p3 '  replicas: 1')"
expect_reject "pool updateStrategy enum" "Unsupported value" kc -n "$NS" apply --dry-run=server -f - <<<"$(pool p4 '  sandboxTemplateRef: {name: t1}
  updateStrategy: {type: Rolling}')"
got="$(kc -n "$NS" apply --dry-run=server -o jsonpath='{.spec.replicas} {.spec.updateStrategy.type}' -f - <<<"$(pool p5 '  sandboxTemplateRef: {name: t1}
  updateStrategy: {}')" 2>&1)"
[[ "$got" == "1 OnReplenish" ]] && ok "pool defaults: replicas 1, updateStrategy.type OnReplenish" || bad "pool defaults: got '$got'"
expect_ok "minimal SandboxClaim accepted" kc -n "$NS" apply --dry-run=server -f - <<<"$(claim c1 '  warmPoolRef: {name: p1}')"
expect_reject "claim warmPoolRef required" "warmPoolRef: Required value" kc -n "$NS" apply --dry-run=server -f - <<<"$(claim c2 '  lifecycle: {shutdownPolicy: Delete}')"
expect_reject "claim shutdownPolicy enum" "Unsupported value" kc -n "$NS" apply --dry-run=server -f - <<<"$(claim c3 '  warmPoolRef: {name: p1}
  lifecycle: {shutdownPolicy: Forever}')"
expect_reject "claim ttlSecondsAfterFinished >= 0" "should be greater than or equal to 0" kc -n "$NS" apply --dry-run=server -f - <<<"$(claim c4 '  warmPoolRef: {name: p1}
  lifecycle: {ttlSecondsAfterFinished: -1}')"

echo "== defaults and validation"
expect_ok "minimal Sandbox accepted" apply_str "$(sandbox s1)"
[[ "$(kc -n "$NS" get sandbox s1 -o jsonpath='{.spec.operatingMode}/{.spec.shutdownPolicy}')" == Running/Retain ]] &&
    ok "defaults operatingMode=Running shutdownPolicy=Retain" || bad "defaults not applied"
expect_reject "operatingMode enum" 'Unsupported value: "Paused"' \
    apply_str "$(sandbox bad1 '  operatingMode: Paused')"
expect_reject "shutdownPolicy enum" 'Unsupported value: "Forever"' \
    apply_str "$(sandbox bad2 '  shutdownPolicy: Forever')"
expect_reject "shutdownTime format" 'spec.shutdownTime' \
    apply_str "$(sandbox bad3 '  shutdownTime: tomorrow')"
expect_reject "service must be a boolean" 'spec.service' \
    apply_str "$(sandbox bad4 '  service: "yes"')"
expect_reject "podTemplate required" 'spec.podTemplate: Required value' apply_str "apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata: {name: bad5, namespace: $NS}
spec: {service: true}"
expect_reject "podTemplate.spec.containers required" 'spec.podTemplate.spec.containers: Required value' \
    apply_str "apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata: {name: bad6, namespace: $NS}
spec: {podTemplate: {spec: {restartPolicy: Never}}}"
expect_reject "volumeClaimTemplates[].spec required" 'spec.volumeClaimTemplates[0].spec: Required value' \
    apply_str "$(sandbox bad7 '  volumeClaimTemplates: [{metadata: {name: data}}]')"
expect_ok "full spec accepted" apply_str "$(sandbox full '  service: true
  shutdownTime: "2030-01-01T00:00:00Z"
  shutdownPolicy: Delete
  operatingMode: Suspended
  volumeClaimTemplates:
  - metadata: {name: data, labels: {a: b}, annotations: {c: d}}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}')"

echo "== volumeClaimTemplates immutability (CEL)"
vct='  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}'
expect_ok "Sandbox with volumeClaimTemplates created" apply_str "$(sandbox imm "$vct")"
expect_reject "changing a template's storage request" "volumeClaimTemplates is immutable" \
    kc -n "$NS" patch sandbox imm --type=json -p '[{"op":"replace","path":"/spec/volumeClaimTemplates/0/spec/resources/requests/storage","value":"2Gi"}]'
expect_reject "changing a template's name" "volumeClaimTemplates is immutable" \
    kc -n "$NS" patch sandbox imm --type=json -p '[{"op":"replace","path":"/spec/volumeClaimTemplates/0/metadata/name","value":"other"}]'
expect_reject "adding a template" "volumeClaimTemplates is immutable" \
    kc -n "$NS" patch sandbox imm --type=json -p '[{"op":"add","path":"/spec/volumeClaimTemplates/-","value":{"metadata":{"name":"more"},"spec":{"accessModes":["ReadWriteOnce"]}}}]'
expect_reject "removing volumeClaimTemplates" "volumeClaimTemplates is immutable" \
    kc -n "$NS" patch sandbox imm --type=json -p '[{"op":"remove","path":"/spec/volumeClaimTemplates"}]'
expect_reject "adding volumeClaimTemplates to a Sandbox without them" "volumeClaimTemplates is immutable" \
    kc -n "$NS" patch sandbox s1 --type=merge -p '{"spec":{"volumeClaimTemplates":[{"metadata":{"name":"x"},"spec":{}}]}}'
expect_ok "operatingMode edit accepted" kc -n "$NS" patch sandbox imm --type=merge -p '{"spec":{"operatingMode":"Suspended"}}'
expect_ok "service/shutdownTime/shutdownPolicy edits accepted" kc -n "$NS" patch sandbox imm --type=merge \
    -p '{"spec":{"service":true,"shutdownTime":"2031-01-01T00:00:00Z","shutdownPolicy":"Delete"}}'
expect_ok "podTemplate edit accepted" kc -n "$NS" patch sandbox imm --type=merge \
    -p '{"spec":{"podTemplate":{"metadata":{"labels":{"x":"y"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}'
expect_ok "metadata edit accepted" kc -n "$NS" label sandbox imm foo=bar

echo "== Service name rules (CEL on metadata.name)"
long="s$(printf 'a%.0s' $(seq 63))"   # 64 characters
expect_reject "64-character name with service: true" "at most 63 characters when spec.service is true" \
    apply_str "$(sandbox "$long" '  service: true')"
expect_ok "64-character name without service" apply_str "$(sandbox "$long")"
expect_ok "64-character name with service: false" apply_str "$(sandbox "$long" '  service: false')"
expect_reject "turning service on for a 64-character name" "at most 63 characters" \
    kc -n "$NS" patch sandbox "$long" --type=merge -p '{"spec":{"service":true}}'
expect_ok "63-character name with service: true" apply_str "$(sandbox "${long:1}" '  service: true')"
expect_reject "dotted name with service: true" "DNS-1035 label" apply_str "$(sandbox a.b '  service: true')"
expect_reject "name starting with a digit with service: true" "DNS-1035 label" apply_str "$(sandbox 1abc '  service: true')"
expect_ok "dotted name without service" apply_str "$(sandbox a.b)"

echo "== status subresource and printer columns"
expect_ok "status written through the status subresource" kc -n "$NS" patch sandbox s1 --subresource=status --type=merge -p \
    '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"DependenciesReady","message":"Pod is Ready","lastTransitionTime":"2026-01-01T00:00:00Z","observedGeneration":1}],"podIPs":["127.0.1.5"],"nodeName":"kwok-node-0","selector":"agents.x-k8s.io/sandbox-name-hash=abcd1234","service":"s1","serviceFQDN":"s1.verify-deploy.svc.cluster.local"}}'
[[ "$(kc -n "$NS" get sandbox s1 -o jsonpath='{.status.podIPs[0]} {.status.serviceFQDN}')" == "127.0.1.5 s1.verify-deploy.svc.cluster.local" ]] &&
    ok "status fields stored" || bad "status fields not stored (pruned?)"
expect_reject "status condition schema (status enum)" 'Unsupported value: "Maybe"' \
    kc -n "$NS" patch sandbox s1 --subresource=status --type=merge -p \
    '{"status":{"conditions":[{"type":"Ready","status":"Maybe","reason":"X","message":"","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}'
cols="$(kc -n "$NS" get sandboxes 2>&1 | sed -n 1p)"
[[ "$cols" =~ ^NAME\ +READY\ +REASON\ +AGE$ ]] && ok "printer columns: $cols" || bad "printer columns: $cols"
row="$(kc -n "$NS" get sandbox s1 --no-headers)"
[[ "$row" =~ ^s1\ +True\ +DependenciesReady\  ]] && ok "printer row: $row" || bad "printer row: $row"
kc get sandbox -n "$NS" s1 >/dev/null 2>&1 && ok "short name 'sandbox' resolves" || bad "short name"

echo "== RBAC of $SA"
can() { kc auth can-i --as="$SA" "$@" 2>/dev/null; }
for verb in get list watch create update patch delete; do
    for res in pods services persistentvolumeclaims; do
        [[ "$(can "$verb" "$res" -n "$NS")" == yes ]] && ok "can $verb $res" || bad "cannot $verb $res"
    done
done
for verb in get list watch create update patch delete; do
    [[ "$(can "$verb" sandboxes.agents.x-k8s.io -A)" == yes ]] && ok "can $verb sandboxes" || bad "cannot $verb sandboxes"
done
for verb in get update patch; do
    [[ "$(can "$verb" sandboxes.agents.x-k8s.io --subresource=status -n "$NS")" == yes ]] && ok "can $verb sandboxes/status" || bad "cannot $verb sandboxes/status"
done
for verb in create patch; do
    [[ "$(can "$verb" events -n "$NS")" == yes ]] && ok "can $verb events" || bad "cannot $verb events"
    [[ "$(can "$verb" events.events.k8s.io -n "$NS")" == yes ]] && ok "can $verb events.events.k8s.io" || bad "cannot $verb events.events.k8s.io"
done
for verb in get list watch create update patch; do
    [[ "$(can "$verb" leases.coordination.k8s.io -n agent-sandbox-system)" == yes ]] && ok "can $verb leases" || bad "cannot $verb leases"
done
[[ "$(can update sandboxes.agents.x-k8s.io --subresource=finalizers -n "$NS")" == yes ]] && ok "can update sandboxes/finalizers (blockOwnerDeletion)" || bad "cannot update sandboxes/finalizers"
# The extension controllers (extensions_cluster_role.yaml).
for verb in get list watch create update patch delete; do
    for res in sandboxclaims sandboxtemplates sandboxwarmpools; do
        [[ "$(can "$verb" "$res.extensions.agents.x-k8s.io" -A)" == yes ]] && ok "can $verb $res" || bad "cannot $verb $res"
    done
    [[ "$(can "$verb" networkpolicies.networking.k8s.io -n "$NS")" == yes ]] && ok "can $verb networkpolicies" || bad "cannot $verb networkpolicies"
done
for res in sandboxclaims sandboxwarmpools; do
    for verb in get update patch; do
        [[ "$(can "$verb" "$res.extensions.agents.x-k8s.io" --subresource=status -n "$NS")" == yes ]] && ok "can $verb $res/status" || bad "cannot $verb $res/status"
    done
done
for res in sandboxclaims sandboxtemplates sandboxwarmpools; do
    [[ "$(can update "$res.extensions.agents.x-k8s.io" --subresource=finalizers -n "$NS")" == yes ]] && ok "can update $res/finalizers" || bad "cannot update $res/finalizers"
done
# Things it must NOT be able to do.
for args in "get secrets" "list secrets" "create pods --subresource=exec" "get pods --subresource=exec" "create pods --subresource=eviction" \
            "delete leases.coordination.k8s.io" "get nodes" "create sandboxes.agents.x-k8s.io --subresource=finalizers" \
            "update customresourcedefinitions.apiextensions.k8s.io" "create serviceaccounts --subresource=token" "list configmaps" \
            "create clusterrolebindings.rbac.authorization.k8s.io" "delete events" "escalate clusterroles"; do
    # shellcheck disable=SC2086
    [[ "$(can $args -n "$NS" || true)" == no ]] && ok "denied: $args" || bad "allowed: $args"
done

echo "== conversion webhook: v1alpha1, CRD conversion, webhook Service, RBAC"
crd=crd/sandboxes.agents.x-k8s.io
A='.spec.versions[?(@.name=="v1alpha1")]'
B='.spec.versions[?(@.name=="v1beta1")]'
wh 'true false true' "$A.served} {$A.storage} {$A.deprecated" "$crd"
wh 'agents.x-k8s.io/v1alpha1 Sandbox is deprecated; use agents.x-k8s.io/v1beta1 Sandbox instead' "$A.deprecationWarning" "$crd"
wh 'true true' "$B.served} {$B.storage" "$crd"
wh '.spec.replicas .status.replicas .status.selector' "$A.subresources.scale.specReplicasPath} {$A.subresources.scale.statusReplicasPath} {$A.subresources.scale.labelSelectorPath" "$crd"
wh '' "$B.subresources.scale" "$crd"
wh '' "$A.additionalPrinterColumns" "$crd"
wh 'integer int32 1 0 1' "$A.schema.openAPIV3Schema.properties.spec.properties.replicas.type} {$A.schema.openAPIV3Schema.properties.spec.properties.replicas.format} {$A.schema.openAPIV3Schema.properties.spec.properties.replicas.default} {$A.schema.openAPIV3Schema.properties.spec.properties.replicas.minimum} {$A.schema.openAPIV3Schema.properties.spec.properties.replicas.maximum" "$crd"
wh 'integer' "$A.schema.openAPIV3Schema.properties.status.properties.replicas.type" "$crd"
wh '' "$A.schema.openAPIV3Schema.properties.spec.properties.operatingMode}{$A.schema.openAPIV3Schema.properties.status.properties.nodeName" "$crd"
# upstream's v1alpha1 has no CEL rule (no volumeClaimTemplates immutability);
# ours carries only the Service name rules, the same as v1beta1's root rules
[[ "$(kc get "$crd" -o json | python3 -c 'import json,sys; vs={x["name"]: x["schema"]["openAPIV3Schema"] for x in json.load(sys.stdin)["spec"]["versions"]}; a=vs["v1alpha1"]; print("x-kubernetes-validations" in json.dumps(a["properties"]) or a.get("x-kubernetes-validations") != vs["v1beta1"].get("x-kubernetes-validations"))')" == False ]] &&
    ok "v1alpha1 schema: only the Service name rules of v1beta1" || bad "v1alpha1 schema CEL rules differ"
long1="a$(printf 'b%.0s' $(seq 63))"   # 64 characters
expect_reject "v1alpha1: 64-character name with service: true" "at most 63 characters when spec.service is true" \
    apply_str "$(sandbox "$long1" '  service: true' | sed 's#agents.x-k8s.io/v1beta1#agents.x-k8s.io/v1alpha1#')"
# the same podTemplate/volumeClaimTemplates/service/shutdown* schema as v1beta1
for f in podTemplate volumeClaimTemplates service shutdownTime shutdownPolicy; do
    [[ "$(kc get "$crd" -o jsonpath="{$A.schema.openAPIV3Schema.properties.spec.properties.$f}")" == \
       "$(kc get "$crd" -o jsonpath="{$B.schema.openAPIV3Schema.properties.spec.properties.$f}" | sed 's/,"x-kubernetes-validations":\[[^]]*\]//')" ]] &&
        ok "v1alpha1 spec.$f schema = v1beta1's" || bad "v1alpha1 spec.$f schema differs from v1beta1's"
done
wh 'Webhook v1 v1beta1' '.spec.conversion.strategy} {.spec.conversion.webhook.conversionReviewVersions[0]} {.spec.conversion.webhook.conversionReviewVersions[1]' "$crd"
wh 'agent-sandbox-webhook-service agent-sandbox-system /convert' '.spec.conversion.webhook.clientConfig.service.name} {.spec.conversion.webhook.clientConfig.service.namespace} {.spec.conversion.webhook.clientConfig.service.path' "$crd"
wh 'webhook 443 9443 TCP' '.spec.ports[0].name} {.spec.ports[0].port} {.spec.ports[0].targetPort} {.spec.ports[0].protocol' service/agent-sandbox-webhook-service
wh '{"app":"agent-sandbox-controller"}' .spec.selector service/agent-sandbox-webhook-service
for crdname in sandboxes.agents.x-k8s.io sandboxclaims.extensions.agents.x-k8s.io \
               sandboxtemplates.extensions.agents.x-k8s.io sandboxwarmpools.extensions.agents.x-k8s.io; do
    for verb in get patch update; do
        [[ "$(can "$verb" "customresourcedefinitions.apiextensions.k8s.io/$crdname")" == yes ]] &&
            ok "can $verb crd/$crdname" || bad "cannot $verb crd/$crdname"
    done
done
for args in "get customresourcedefinitions.apiextensions.k8s.io/other.example.com" "patch customresourcedefinitions.apiextensions.k8s.io/other.example.com" \
            "list customresourcedefinitions.apiextensions.k8s.io" "create customresourcedefinitions.apiextensions.k8s.io" \
            "delete customresourcedefinitions.apiextensions.k8s.io/sandboxes.agents.x-k8s.io"; do
    # shellcheck disable=SC2086
    [[ "$(can $args || true)" == no ]] && ok "denied: $args" || bad "allowed: $args"
done
[[ "$(can create secrets -n agent-sandbox-system)" == yes ]] && ok "can create secrets in agent-sandbox-system" || bad "cannot create secrets in agent-sandbox-system"
for verb in get patch update; do
    [[ "$(can "$verb" secrets/agent-sandbox-webhook-certs -n agent-sandbox-system)" == yes ]] &&
        ok "can $verb secrets/agent-sandbox-webhook-certs" || bad "cannot $verb secrets/agent-sandbox-webhook-certs"
done
for args in "get secrets/other -n agent-sandbox-system" "list secrets -n agent-sandbox-system" "watch secrets -n agent-sandbox-system" \
            "delete secrets/agent-sandbox-webhook-certs -n agent-sandbox-system" "create secrets -n default" \
            "get secrets/agent-sandbox-webhook-certs -n default"; do
    # shellcheck disable=SC2086
    [[ "$(can $args || true)" == no ]] && ok "denied: $args" || bad "allowed: $args"
done

echo "== acting as the ServiceAccount with a TokenRequest token (sa-kubeconfig)"
sakc="$("$LC" sa-kubeconfig agent-sandbox-system agent-sandbox-controller 2>/dev/null | tail -1)"
whoami="$("$ROOT/tools/local-cluster" kubectl auth whoami --kubeconfig="$sakc" -o jsonpath='{.status.userInfo.username}' 2>&1 || true)"
[[ "$whoami" == "$SA" ]] && ok "sa-kubeconfig authenticates as $whoami" || bad "sa-kubeconfig whoami: $whoami"
sak() { "$ROOT/tools/local-cluster" kubectl --kubeconfig="$sakc" "$@"; }
expect_ok "SA lists sandboxes cluster-wide" sak get sandboxes -A
uid="$(kc -n "$NS" get sandbox s1 -o jsonpath='{.metadata.uid}')"
expect_ok "SA creates a Pod owned by a Sandbox (blockOwnerDeletion)" sak -n "$NS" create -f - <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: s1
  labels: {agents.x-k8s.io/sandbox-name-hash: abcd1234}
  ownerReferences:
  - {apiVersion: agents.x-k8s.io/v1beta1, kind: Sandbox, name: s1, uid: $uid, controller: true, blockOwnerDeletion: true}
spec:
  containers: [{name: c, image: $IMAGE}]
EOF
expect_ok "SA patches Sandbox status" sak -n "$NS" patch sandbox s1 --subresource=status --type=merge -p '{"status":{"nodeName":"kwok-node-1"}}'
expect_reject "SA cannot read secrets" "forbidden" sak -n "$NS" get secrets
expect_reject "SA cannot read configmaps" "forbidden" sak -n "$NS" get configmaps
if kc -n "$NS" wait --for=condition=Ready pod/s1 --timeout=60s >/dev/null 2>&1; then
    ip="$(kc -n "$NS" get pod s1 -o jsonpath='{.status.podIP}')"
    [[ "$ip" == 127.* ]] && ok "that Pod is Ready on a kwok node with IP $ip" || bad "pod IP $ip not in 127/8"
else bad "pod s1 did not become Ready"; fi
expect_ok "deleting the Sandbox (foreground) garbage-collects its Pod" kc -n "$NS" delete sandbox s1 --cascade=foreground --timeout=60s
kc -n "$NS" get pod s1 >/dev/null 2>&1 && bad "pod s1 still exists after its Sandbox was deleted" || ok "pod s1 is gone"

kc delete namespace "$NS" --wait=false >/dev/null
echo "== $pass passed, $fail failed"
(( fail == 0 ))
