{{/*
The app's name: "karpenter", the name of upstream's chart, so that `helm upgrade karpenter
charts/dovetail` over an upstream release keeps every object's name and the Deployment's selector
(app.kubernetes.io/name, immutable). The chart itself is still called dovetail (helm.sh/chart).
*/}}
{{- define "dovetail.name" -}}
{{- default "karpenter" .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name: the release name, unless it does not contain the app's name. */}}
{{- define "dovetail.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "dovetail.name" . }}
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

{{/*
The controller's image. Values written for upstream's chart name upstream's image
(public.ecr.aws/karpenter/controller, with its tag and digest): that image is not Dovetail, so
its repository, tag and digest are all replaced by Dovetail's default (NOTES.txt says so). A
digest is used only with the repository it was given with.
*/}}
{{- define "dovetail.upstreamImage" -}}
{{- $repo := .Values.controller.image.repository | default "" }}
{{- if hasPrefix "public.ecr.aws/karpenter/" $repo -}}
true
{{- end }}
{{- end }}

{{- define "dovetail.controller.image" -}}
{{- $img := .Values.controller.image }}
{{- if include "dovetail.upstreamImage" . }}
{{- printf "dovetail/controller:%s" .Chart.AppVersion }}
{{- else if $img.digest }}
{{- printf "%s:%s@%s" $img.repository (default .Chart.AppVersion $img.tag) $img.digest }}
{{- else }}
{{- printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag) }}
{{- end }}
{{- end }}

{{/*
Pod (anti-)affinity terms without a labelSelector get the pods' selector labels, as upstream's
chart does. Takes (dict "affinity" AFFINITY "selector" LABELS); returns the patched affinity.
*/}}
{{- define "dovetail.patchAffinity" -}}
{{- $affinity := deepCopy (default dict .affinity) }}
{{- range $kind := list "podAffinity" "podAntiAffinity" }}
{{- with (index $affinity $kind) }}
{{- range $term := (index . "requiredDuringSchedulingIgnoredDuringExecution" | default list) }}
{{- if not (hasKey $term "labelSelector") }}
{{- $_ := set $term "labelSelector" (dict "matchLabels" $.selector) }}
{{- end }}
{{- end }}
{{- range $weighted := (index . "preferredDuringSchedulingIgnoredDuringExecution" | default list) }}
{{- if and $weighted.podAffinityTerm (not (hasKey $weighted.podAffinityTerm "labelSelector")) }}
{{- $_ := set $weighted.podAffinityTerm "labelSelector" (dict "matchLabels" $.selector) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml $affinity }}
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

{{/*
Values of charts written for older Karpenter releases: the pre-v1 top-level keys (clusterName,
clusterEndpoint, aws.defaultInstanceProfile) and v0.32's settings.aws.*. Each is mapped to its v1
setting when that setting is not set itself (a deprecation note in the install output, see
NOTES.txt), or refused with what to do instead when v1 has no such setting. Renders YAML:
{settings: <the effective settings>, notes: [...], refused: [...]}.
*/}}
{{- define "dovetail.legacySettings" -}}
{{- $settings := deepCopy (.Values.settings | default dict) }}
{{- $notes := list }}
{{- $refused := list }}
{{- $aws := dict }}
{{- if kindIs "map" (index $settings "aws") }}{{- $aws = index $settings "aws" }}{{- end }}
{{- $_ := unset $settings "aws" }}
{{- $top := dict "clusterName" .Values.clusterName "clusterEndpoint" .Values.clusterEndpoint }}
{{- range $key := list "clusterName" "clusterEndpoint" }}
{{- $old := index $top $key }}
{{- if $old }}
{{- if not (index $settings $key) }}{{- $_ := set $settings $key $old }}{{- end }}
{{- $notes = append $notes (printf "%s is deprecated: it was mapped to settings.%s" $key $key) }}
{{- end }}
{{- end }}
{{- /* The v1 setting takes the old value only while it has values.yaml's default. */}}
{{- $defaults := dict "clusterName" "" "clusterEndpoint" "" "interruptionQueue" "" "isolatedVPC" "false" "vmMemoryOverheadPercent" "0.075" "reservedENIs" "0" }}
{{- $map := dict "clusterName" "clusterName" "clusterEndpoint" "clusterEndpoint" "interruptionQueueName" "interruptionQueue" "isolatedVPC" "isolatedVPC" "vmMemoryOverheadPercent" "vmMemoryOverheadPercent" "reservedENIs" "reservedENIs" }}
{{- range $old := keys $aws | sortAlpha }}
{{- $value := index $aws $old }}
{{- if hasKey $map $old }}
{{- $new := index $map $old }}
{{- $cur := "" }}
{{- if hasKey $settings $new }}{{- $cur = toString (index $settings $new) }}{{- end }}
{{- if or (eq $cur "") (eq $cur (index $defaults $new)) }}
{{- $_ := set $settings $new $value }}
{{- end }}
{{- $notes = append $notes (printf "settings.aws.%s is deprecated: it was mapped to settings.%s" $old $new) }}
{{- else if eq $old "defaultInstanceProfile" }}
{{- if $value }}{{- $refused = append $refused "settings.aws.defaultInstanceProfile: Karpenter v1 has no default instance profile; set spec.role or spec.instanceProfile on each EC2NodeClass (dovetail convert moves it there)" }}{{- end }}
{{- else if eq $old "enablePodENI" }}
{{- $notes = append $notes "settings.aws.enablePodENI is deprecated and ignored: vpc.amazonaws.com/pod-eni is always part of an instance type's capacity in v1" }}
{{- else if eq $old "enableENILimitedPodDensity" }}
{{- if eq (toString $value) "false" }}{{- $refused = append $refused "settings.aws.enableENILimitedPodDensity=false: set spec.kubelet.maxPods (e.g. 110) on each EC2NodeClass instead" }}{{- else }}{{- $notes = append $notes "settings.aws.enableENILimitedPodDensity is deprecated and ignored: ENI-limited pod density is the v1 default" }}{{- end }}
{{- else if eq $old "nodeNameConvention" }}
{{- if and $value (ne (toString $value) "ip-name") }}{{- $refused = append $refused (printf "settings.aws.nodeNameConvention=%s: v1 names nodes as EC2 does (ip-name); remove it" $value) }}{{- else }}{{- $notes = append $notes "settings.aws.nodeNameConvention is deprecated and ignored: ip-name is the only convention in v1" }}{{- end }}
{{- else if has $old (list "assumeRoleARN" "assumeRoleDuration") }}
{{- if $value }}{{- $refused = append $refused (printf "settings.aws.%s: v1 assumes no role itself; use IRSA, EKS Pod Identity or a shared-config profile with role_arn (docs/aws.md#credentials)" $old) }}{{- end }}
{{- else if eq $old "tags" }}
{{- if $value }}{{- $refused = append $refused "settings.aws.tags: set spec.tags on each EC2NodeClass instead" }}{{- end }}
{{- else }}
{{- $refused = append $refused (printf "settings.aws.%s is not a setting of Karpenter v1" $old) }}
{{- end }}
{{- end }}
{{- if and (kindIs "map" .Values.aws) .Values.aws.defaultInstanceProfile }}
{{- $refused = append $refused "aws.defaultInstanceProfile: Karpenter v1 has no default instance profile; set spec.role or spec.instanceProfile on each EC2NodeClass (dovetail convert moves it there)" }}
{{- end }}
{{- if kindIs "map" (index $settings "featureGates") }}
{{- if hasKey (index $settings "featureGates") "driftEnabled" }}
{{- $gates := deepCopy (index $settings "featureGates") }}
{{- $_ := unset $gates "driftEnabled" }}
{{- $_ := set $settings "featureGates" $gates }}
{{- $notes = append $notes "settings.featureGates.driftEnabled is deprecated and ignored: drift is always on in v1" }}
{{- end }}
{{- end }}
{{- toYaml (dict "settings" $settings "notes" $notes "refused" $refused) }}
{{- end }}
