{{/*
Chart name.
*/}}
{{- define "vqs.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified app name (63 chars max, DNS-1123).
*/}}
{{- define "vqs.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Chart label value.
*/}}
{{- define "vqs.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Selector labels (immutable: never add mutable values here).
*/}}
{{- define "vqs.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vqs.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Kubernetes recommended labels.
*/}}
{{- define "vqs.labels" -}}
helm.sh/chart: {{ include "vqs.chart" . }}
{{ include "vqs.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/component: gateway
app.kubernetes.io/part-of: vqs
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "vqs.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "vqs.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "vqs.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/*
Name of the Secret holding VQS_RECEIPT_SECRET.
*/}}
{{- define "vqs.secretName" -}}
{{- if .Values.secret.existingSecret }}
{{- .Values.secret.existingSecret }}
{{- else }}
{{- include "vqs.fullname" . }}
{{- end }}
{{- end }}

{{- define "vqs.secretKey" -}}
{{- if .Values.secret.existingSecret }}
{{- .Values.secret.existingSecretKey | default "VQS_RECEIPT_SECRET" }}
{{- else -}}
VQS_RECEIPT_SECRET
{{- end }}
{{- end }}

{{/*
NATS_CREDS_FILE: mounted creds secret wins over config.natsCredsFile.
*/}}
{{- define "vqs.natsCredsFile" -}}
{{- if .Values.nats.credsSecret }}
{{- printf "%s/%s" (trimSuffix "/" .Values.nats.credsMountPath) .Values.nats.credsSecretKey }}
{{- else }}
{{- .Values.config.natsCredsFile }}
{{- end }}
{{- end }}

{{/*
Render-time validation; fails the install with a readable message.
Included from deployment.yaml.
*/}}
{{- define "vqs.validate" -}}
{{- $_ := required "config.natsUrl is required (comma-separated NATS servers of this region, e.g. nats://nats.nats.svc:4222)" .Values.config.natsUrl }}
{{- $_ = required "config.region is required (e.g. iad1)" .Values.config.region }}
{{- if not .Values.secret.existingSecret }}
{{- $s := required "secret.receiptSecret (>= 32 characters) or secret.existingSecret is required" .Values.secret.receiptSecret }}
{{- if lt (len $s) 32 }}
{{- fail "secret.receiptSecret must be at least 32 characters (e.g. `openssl rand -hex 32`)" }}
{{- end }}
{{- end }}
{{- if eq (.Values.config.nodeEnv | default "production") "production" }}
{{- $o := .Values.config.oidc }}
{{- if not (and $o.jwksUrl $o.issuer $o.audience) }}
{{- fail "config.oidc.jwksUrl, config.oidc.issuer and config.oidc.audience are required (the gateway refuses to start in production without them)" }}
{{- end }}
{{- end }}
{{- if and .Values.autoscaling.enabled (gt (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) }}
{{- fail (printf "autoscaling.minReplicas (%d) must not exceed autoscaling.maxReplicas (%d)" (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) }}
{{- end }}
{{- if eq (int .Values.config.metricsPort) (int .Values.config.port) }}
{{- fail (printf "config.metricsPort (%d) must differ from config.port: GET /metrics is not served on the API port" (int .Values.config.metricsPort)) }}
{{- end }}
{{- with .Values.config.tenantClaims }}
{{- if ne (len (splitList "," .)) 3 }}
{{- fail "config.tenantClaims must name exactly three claims: team,project,environment" }}
{{- end }}
{{- end }}
{{- /*
The large-body store (stream VQS_BODIES) reserves its byte limit on every NATS server holding a
replica when it is made; one that does not fit below the server's max_file_store is never made,
and every large publish answers 503 large_body_store_unavailable. The chart does not render the
NATS release, so config.largeBodies.natsMaxFileStoreBytes says how much JetStream storage the
servers have (null: not checked); 0 store bytes is no limit and reserves nothing.
*/}}
{{- $lb := .Values.config.largeBodies }}
{{- $volume := $lb.natsMaxFileStoreBytes }}
{{- if and (gt (int64 $lb.storeBytes) 0) (not (or (kindIs "invalid" $volume) (eq (toString $volume) ""))) }}
{{- if ge (int64 $lb.storeBytes) (int64 $volume) }}
{{- fail (printf "config.largeBodies.storeBytes (%d) must be less than config.largeBodies.natsMaxFileStoreBytes (%d), the JetStream storage of each NATS server: the large-body store reserves it on every replica and cannot be made otherwise (a quarter of it is a fair start)" (int64 $lb.storeBytes) (int64 $volume)) }}
{{- end }}
{{- end }}
{{- /*
Shutdown timeline: preStop sleep, then SIGTERM; the app turns readiness 503,
waits 2 s, closes the listener and drains, all within 25 s counted from SIGTERM
(fixed in the app). So the pod's terminationGracePeriodSeconds must exceed
preStop + 25.
*/}}
{{- $grace := 25 }}
{{- $preStop := int .Values.preStopSleepSeconds }}
{{- if le (int .Values.terminationGracePeriodSeconds) (add $grace $preStop) }}
{{- fail (printf "terminationGracePeriodSeconds (%d) must be greater than preStopSleepSeconds + 25 s, the app's shutdown grace (%d)" (int .Values.terminationGracePeriodSeconds) (add $grace $preStop)) }}
{{- end }}
{{- end }}
