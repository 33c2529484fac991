{{/* The chart's name, for the app.kubernetes.io/name label. */}}
{{- define "agent-sandbox.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The namespace of every namespaced object: namespace.name, else the release's. */}}
{{- define "agent-sandbox.namespace" -}}
{{- default .Release.Namespace .Values.namespace.name }}
{{- end }}

{{/* The controller's metrics Service. */}}
{{- define "agent-sandbox.serviceName" -}}
{{- default "agent-sandbox-controller" .Values.service.name }}
{{- end }}

{{/* Labels of every object the chart makes. */}}
{{- define "agent-sandbox.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
app.kubernetes.io/name: {{ include "agent-sandbox.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.image.tag }}
app.kubernetes.io/version: {{ . | quote }}
{{- end }}
{{- end }}

{{/* The controller Deployment's selector: upstream's chart's, so that
`helm upgrade` from an upstream release keeps its Deployment (a selector
cannot change). */}}
{{- define "agent-sandbox.selectorLabels" -}}
app.kubernetes.io/name: {{ include "agent-sandbox.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The controller image; the tag is required (upstream's chart has no default). */}}
{{- define "agent-sandbox.image" -}}
{{- printf "%s:%s" .Values.image.repository (required "image.tag is required" .Values.image.tag) }}
{{- end }}

{{/* The router image: router.image, else the controller's. */}}
{{- define "agent-sandbox.routerImage" -}}
{{- $repo := .Values.router.image.repository | default .Values.image.repository }}
{{- $tag := .Values.router.image.tag | default .Values.image.tag }}
{{- printf "%s:%s" $repo (required "router.image.tag or image.tag is required" $tag) }}
{{- end }}

{{/*
A flag's value as the controller parses it. Helm reads numbers from values
files as float64 and prints 1000000 as 1e+06: a whole number is printed
as an integer, when int64 holds it (beyond, int64 would print
-9223372036854775808, a value nobody wrote).
*/}}
{{- define "agent-sandbox.flagValue" -}}
{{- if and (kindIs "float64" .) (eq . (floor .)) (lt . 9.2e18) (gt . -9.2e18) }}{{ int64 . }}{{ else }}{{ . }}{{ end }}
{{- end }}

{{/*
The controller's flags: each controller.* key that is set, false and 0
included (hasKey, never `if`, which would drop them), null not (Helm's
"unset"), in upstream's order;
then the webhook Service's name and namespace; then controller.extraArgs.
*/}}
{{- define "agent-sandbox.controllerArgs" -}}
{{- $c := .Values.controller }}
{{- range list
    (list "leaderElect" "leader-elect")
    (list "clusterDomain" "cluster-domain")
    (list "leaderElectionNamespace" "leader-election-namespace")
    (list "extensions" "extensions")
    (list "enableTracing" "enable-tracing")
    (list "enablePprof" "enable-pprof")
    (list "enablePprofDebug" "enable-pprof-debug")
    (list "pprofBlockProfileRate" "pprof-block-profile-rate")
    (list "pprofMutexProfileFraction" "pprof-mutex-profile-fraction")
    (list "kubeApiQps" "kube-api-qps")
    (list "kubeApiBurst" "kube-api-burst")
    (list "sandboxConcurrentWorkers" "sandbox-concurrent-workers")
    (list "sandboxClaimConcurrentWorkers" "sandbox-claim-concurrent-workers")
    (list "sandboxWarmPoolConcurrentWorkers" "sandbox-warm-pool-concurrent-workers")
    (list "sandboxTemplateConcurrentWorkers" "sandbox-template-concurrent-workers")
    (list "sandboxWarmPoolMaxBatchSize" "sandbox-warm-pool-max-batch-size")
    (list "sandboxWarmPoolReadinessGracePeriod" "sandbox-warm-pool-readiness-grace-period")
    (list "sandboxWarmPoolUnschedulableRecheckInterval" "sandbox-warm-pool-unschedulable-recheck-interval")
    (list "enableWarmPoolEviction" "enable-warm-pool-eviction") }}
{{- $v := index $c (index . 0) }}
{{- if and (hasKey $c (index . 0)) (not (kindIs "invalid" $v)) }}
{{- if or (kindIs "map" $v) (kindIs "slice" $v) }}
{{- fail (printf "controller.%s: want a single value (a flag's), not %s" (index . 0) (kindOf $v)) }}
{{- end }}
- {{ printf "--%s=%s" (index . 1) (include "agent-sandbox.flagValue" $v) | quote }}
{{- end }}
{{- end }}
- {{ printf "--webhook-service-name=%s" .Values.webhookServiceName | quote }}
- {{ printf "--webhook-namespace=%s" (include "agent-sandbox.namespace" .) | quote }}
{{- range $c.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/*
The objects of one deploy/ manifest that tools/gen-install-yaml copied into
files/ (RBAC rules, the router's admission policy), so that their rules are
written once, in deploy/. Each gets the chart's labels and, when
namespaced, the chart's namespace (also in a ServiceAccount's user name).
Argument: (list $ "files/PATH").
*/}}
{{- define "agent-sandbox.fromDeploy" -}}
{{- $ := index . 0 }}
{{- $ns := include "agent-sandbox.namespace" $ }}
{{- $text := $.Files.Get (index . 1) | replace "system:serviceaccount:agent-sandbox-system:" (printf "system:serviceaccount:%s:" $ns) }}
{{- range regexSplit "(?m)^---\\s*$" $text -1 }}
{{- $obj := fromYaml . }}
{{- if $obj }}
{{- $labels := merge (include "agent-sandbox.labels" $ | fromYaml) ($obj.metadata.labels | default dict) }}
{{- $_ := set $obj.metadata "labels" $labels }}
{{- if hasKey $obj.metadata "namespace" }}
{{- $_ := set $obj.metadata "namespace" $ns }}
{{- end }}
---
{{ toYaml $obj }}
{{- end }}
{{- end }}
{{- end }}
