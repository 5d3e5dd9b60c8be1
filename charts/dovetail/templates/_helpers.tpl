{{/* The chart's name. */}}
{{- define "dovetail.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name: the release name, unless it does not contain the chart's name. */}}
{{- define "dovetail.fullname" -}}
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

{{- define "dovetail.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "dovetail.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dovetail.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "dovetail.labels" -}}
helm.sh/chart: {{ include "dovetail.chart" . }}
{{ include "dovetail.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "dovetail.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "dovetail.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "dovetail.controller.image" -}}
{{- $img := .Values.controller.image }}
{{- if $img.digest }}
{{- printf "%s@%s" $img.repository $img.digest }}
{{- else }}
{{- printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag) }}
{{- end }}
{{- end }}

{{/*
settings.* key -> environment variable, upstream Karpenter's names. The Deployment passes each
non-empty value; test/helm/chart_checks.py checks that every key here reaches its variable and
that every key of values.yaml's settings (but featureGates/awsFeatureGates) is listed.
*/}}
{{- define "dovetail.settingsEnv" -}}
batchMaxDuration: BATCH_MAX_DURATION
batchIdleDuration: BATCH_IDLE_DURATION
preferencePolicy: PREFERENCE_POLICY
minValuesPolicy: MIN_VALUES_POLICY
clusterCABundle: CLUSTER_CA_BUNDLE
clusterName: CLUSTER_NAME
clusterEndpoint: CLUSTER_ENDPOINT
isolatedVPC: ISOLATED_VPC
eksControlPlane: EKS_CONTROL_PLANE
vmMemoryOverheadPercent: VM_MEMORY_OVERHEAD_PERCENT
interruptionQueue: INTERRUPTION_QUEUE
enableZonalShift: ENABLE_ZONAL_SHIFT
reservedENIs: RESERVED_ENIS
ignoreDRARequests: IGNORE_DRA_REQUESTS
disableClusterStateObservability: DISABLE_CLUSTER_STATE_OBSERVABILITY
disableDryRun: DISABLE_DRY_RUN
amiRefreshInterval: AMI_REFRESH_INTERVAL
subnetRefreshInterval: SUBNET_REFRESH_INTERVAL
securityGroupRefreshInterval: SECURITY_GROUP_REFRESH_INTERVAL
{{- end }}

{{/* "a=true,b=false" from a map of gates: camelCase keys become UpperCamelCase names (nodeClassCEL -> NodeClassCEL). */}}
{{- define "dovetail.gates" -}}
{{- $out := list }}
{{- range $k := keys . | sortAlpha }}
{{- $out = append $out (printf "%s%s=%v" (substr 0 1 $k | upper) (substr 1 (len $k) $k) (index $ $k)) }}
{{- end }}
{{- join "," $out }}
{{- end }}
