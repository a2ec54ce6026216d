{{/*
Names, labels, images and the shared pieces of every app's objects. No library chart: these are the
chart's own helpers (bitnami's common chart is not reachable from where restash is built).
*/}}

{{/* The chart name, or nameOverride. */}}
{{- define "restash.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's base name: fullnameOverride, else the release name when it already holds the chart name, else "<release>-<chart>". */}}
{{- define "restash.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The apps: values key -> component name (the image and object suffix). */}}
{{- define "restash.apps" -}}
kvGateway: kv-gateway
vectorGateway: vector-gateway
streamGateway: stream-gateway
queueGateway: queue-gateway
queueWorker: queue-worker
operator: operator
{{- end -}}

{{/*
Every Deployment's values key and component, as a YAML list of {key, component}: the apps of restash.apps, then the
queue-worker of each of queueStore.servers (key queueWorker, component queue-worker-<name>).
*/}}
{{- define "restash.workloads" -}}
{{- $apps := include "restash.apps" . | fromYaml -}}
{{- range $key := list "kvGateway" "vectorGateway" "streamGateway" "queueGateway" "queueWorker" "operator" }}
- key: {{ $key }}
  component: {{ index $apps $key }}
{{- end }}
{{- range .Values.queueStore.servers }}
- key: queueWorker
  component: {{ printf "queue-worker-%s" .name }}
{{- end }}
{{- end -}}

{{/* The name of an app's objects: "<fullname>-<component>". Context: dict "root" $ "component" name. */}}
{{- define "restash.componentName" -}}
{{- printf "%s-%s" (include "restash.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels on every object; with "component", the app's too. Context: dict "root" $ ["component" name]. */}}
{{- define "restash.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "restash.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: restash
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels (immutable in a Deployment: never add to them). Context as restash.labels. */}}
{{- define "restash.selectorLabels" -}}
app.kubernetes.io/name: {{ include "restash.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- if .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
{{- end -}}

{{/* commonAnnotations merged with extra ones, as a YAML map or nothing. Context: dict "root" $ "extra" map. */}}
{{- define "restash.annotations" -}}
{{- $all := merge (dict) (.extra | default dict) (.root.Values.commonAnnotations | default dict) -}}
{{- if $all }}
{{- toYaml $all }}
{{- end }}
{{- end -}}

{{/*
An image reference: registry/repository:tag, or @digest when a digest is set. The tag defaults to the chart's
appVersion. global.imageRegistry replaces every registry. Context: dict "root" $ "image" the image values.
*/}}
{{- define "restash.image" -}}
{{- $registry := .image.registry -}}
{{- if .root.Values.global.imageRegistry }}{{ $registry = .root.Values.global.imageRegistry }}{{ end -}}
{{- $name := .image.repository -}}
{{- if $registry }}{{ $name = printf "%s/%s" $registry .image.repository }}{{ end -}}
{{- if .image.digest -}}
{{- printf "%s@%s" $name .image.digest -}}
{{- else -}}
{{- printf "%s:%s" $name (toString (.image.tag | default .root.Chart.AppVersion)) -}}
{{- end -}}
{{- end -}}

{{/* A scalar as an env value string: numbers without an exponent (YAML numbers reach templates as float64). */}}
{{- define "restash.envValue" -}}
{{- if kindIs "float64" . -}}
{{- if eq (float64 (int64 .)) . }}{{ int64 . }}{{ else }}{{ . }}{{ end -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end -}}

{{/* The Secret the chart renders for URLs and keys given as values (a Redis URL may hold a password). */}}
{{- define "restash.secretName" -}}
{{- printf "%s-config" (include "restash.fullname" .) -}}
{{- end -}}

{{/* Where CONTROL_REDIS_URL comes from: dict "name" secret "key" key. */}}
{{- define "restash.controlRedis.secretRef" -}}
{{- if .Values.controlRedis.existingSecret -}}
name: {{ tpl .Values.controlRedis.existingSecret . }}
key: {{ .Values.controlRedis.existingSecretKey }}
{{- else -}}
name: {{ include "restash.secretName" . }}
key: control-redis-url
{{- end -}}
{{- end -}}

{{/* Where QUEUE_REDIS_URL comes from; the control Redis unless queueStore.redis says otherwise. */}}
{{- define "restash.queueRedis.secretRef" -}}
{{- if .Values.queueStore.redis.existingSecret -}}
name: {{ tpl .Values.queueStore.redis.existingSecret . }}
key: {{ .Values.queueStore.redis.existingSecretKey }}
{{- else if .Values.queueStore.redis.url -}}
name: {{ include "restash.secretName" . }}
key: queue-redis-url
{{- else -}}
{{ include "restash.controlRedis.secretRef" . }}
{{- end -}}
{{- end -}}

{{/* The registry seal key's Secret: existingSecret, else the one generated (registrySealKey.generate). */}}
{{- define "restash.sealKey.secretRef" -}}
{{- if .Values.registrySealKey.existingSecret -}}
name: {{ tpl .Values.registrySealKey.existingSecret . }}
key: {{ .Values.registrySealKey.existingSecretKey }}
{{- else -}}
name: {{ printf "%s-registry-seal" (include "restash.fullname" .) }}
key: key
{{- end -}}
{{- end -}}

{{/* CONTROL_REDIS_URL and REGISTRY_SEAL_KEY, which every app reads. */}}
{{- define "restash.env.platform" -}}
- name: CONTROL_REDIS_URL
  valueFrom:
    secretKeyRef:
      {{- include "restash.controlRedis.secretRef" . | nindent 6 }}
- name: REGISTRY_SEAL_KEY
  valueFrom:
    secretKeyRef:
      {{- include "restash.sealKey.secretRef" . | nindent 6 }}
{{- end -}}

{{/* Where the URL of one of queueStore.servers comes from. Context: dict "root" $ "server" the entry. */}}
{{- define "restash.queueServer.secretRef" -}}
{{- if .server.existingSecret -}}
name: {{ tpl .server.existingSecret .root }}
key: {{ .server.existingSecretKey | default "url" }}
{{- else -}}
name: {{ include "restash.secretName" .root }}
key: {{ printf "queue-redis-url-%s" .server.name }}
{{- end -}}
{{- end -}}

{{/*
The queue storage variables (queueStoreEnv and queueServersEnv) of queue-gateway and the operator, which reach every
queue Redis server: QUEUE_REDIS_SERVERS is built from one variable per server (`$(…)`, expanded by the kubelet),
since the URLs come from Secrets.
*/}}
{{- define "restash.env.queueStore" -}}
- name: QUEUE_REDIS_URL
  valueFrom:
    secretKeyRef:
      {{- include "restash.queueRedis.secretRef" . | nindent 6 }}
{{- $root := . }}
{{- $entries := list }}
{{- range $i, $server := .Values.queueStore.servers }}
- name: {{ printf "RESTASH_QUEUE_SERVER_URL_%d" $i }}
  valueFrom:
    secretKeyRef:
      {{- include "restash.queueServer.secretRef" (dict "root" $root "server" $server) | nindent 6 }}
{{- $entries = append $entries (printf "%s=$(RESTASH_QUEUE_SERVER_URL_%d)" $server.name $i) }}
{{- end }}
{{- if $entries }}
- name: QUEUE_REDIS_SERVERS
  value: {{ join " " $entries | quote }}
{{- end }}
{{ include "restash.env.queueOptions" . }}
{{- end -}}

{{/* The queue storage variables but the URLs (queueStoreEnv): the same for queue-gateway, every queue-worker and the operator. */}}
{{- define "restash.env.queueOptions" -}}
- name: QUEUE_PREFIX
  value: {{ .Values.queueStore.prefix | quote }}
- name: MESSAGE_RETENTION_MS
  value: {{ include "restash.envValue" .Values.queueStore.messageRetentionMs | quote }}
- name: DLQ_RETENTION_MS
  value: {{ include "restash.envValue" .Values.queueStore.dlqRetentionMs | quote }}
- name: EVENTS_PER_PROJECT
  value: {{ include "restash.envValue" .Values.queueStore.eventsPerProject | quote }}
{{- end -}}

{{/* An app's `config` map (env var name -> value) as env entries. Context: the map. */}}
{{- define "restash.env.config" -}}
{{- range $name, $value := . }}
- name: {{ $name }}
  value: {{ include "restash.envValue" $value | quote }}
{{- end }}
{{- end -}}

{{/* The in-cluster URL of a gateway's API Service. Context: dict "root" $ "key" values key. */}}
{{- define "restash.gatewayUrl" -}}
{{- $apps := include "restash.apps" . | fromYaml -}}
{{- $app := index .root.Values .key -}}
{{- printf "http://%s.%s.svc.%s:%d" (include "restash.componentName" (dict "root" .root "component" (index $apps .key))) .root.Release.Namespace .root.Values.clusterDomain (int $app.service.ports.http) -}}
{{- end -}}

{{/*
A checksum of what the chart renders into Secrets and of each app's values, as a pod annotation: a changed
value changes the pod template and rolls the pods. Context: dict "root" $ "key" values key.
*/}}
{{- define "restash.checksums" -}}
checksum/config: {{ include (print .root.Template.BasePath "/secret.yaml") .root | sha256sum }}
checksum/values: {{ toJson (dict "app" (index .root.Values .key) "queueStore" .root.Values.queueStore "backends" (list .root.Values.kafka .root.Values.qdrant .root.Values.embedding)) | sha256sum }}
{{- end -}}
