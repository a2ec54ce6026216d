{{/*
The objects every app gets from its values block (see values.yaml, section "Apps"): Deployment, ServiceAccount,
Service, PodDisruptionBudget. Context for each: dict
  "root"  $
  "key"   the values key (kvGateway, ...)
  "env"   the app's own env entries (a YAML list as text)
  "api"   true when the app serves an API on containerPorts.http (all but queue-worker and the operator)
  "component" (optional) the objects' component name instead of the key's (a queue-worker of one of queueStore.servers)
*/}}

{{- define "restash.deployment" -}}
{{- $root := .root -}}
{{- $apps := include "restash.apps" $root | fromYaml -}}
{{- $component := .component | default (index $apps .key) -}}
{{- $app := index $root.Values .key -}}
{{- $ctx := dict "root" $root "component" $component -}}
{{- $selector := include "restash.selectorLabels" $ctx | fromYaml -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "restash.componentName" $ctx }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "restash.labels" $ctx | nindent 4 }}
  {{- with (include "restash.annotations" (dict "root" $root)) }}
  annotations:
    {{- . | nindent 4 }}
  {{- end }}
spec:
  replicas: {{ $app.replicaCount }}
  revisionHistoryLimit: {{ $root.Values.revisionHistoryLimit }}
  selector:
    matchLabels:
      {{- toYaml $selector | nindent 6 }}
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 0
      maxSurge: {{ $app.maxSurge | default 1 }}
  template:
    metadata:
      labels:
        {{- include "restash.labels" $ctx | nindent 8 }}
        {{- with $app.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        {{- include "restash.checksums" (dict "root" $root "key" .key) | nindent 8 }}
        {{- with $app.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "restash.componentName" $ctx }}
      {{- /* The operator talks to the API server; so does queue-worker when it watches namespaces' addresses. */}}
      automountServiceAccountToken: {{ or (eq .key "operator") (and (eq .key "queueWorker") $root.Values.queueWorker.inNamespaceDestinations) }}
      enableServiceLinks: false
      {{- with $root.Values.global.imagePullSecrets }}
      imagePullSecrets:
        {{- range . }}
        - name: {{ . }}
        {{- end }}
      {{- end }}
      {{- with $app.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      terminationGracePeriodSeconds: {{ $app.terminationGracePeriodSeconds }}
      securityContext:
        {{- toYaml $app.podSecurityContext | nindent 8 }}
      {{- with $app.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $app.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $app.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $app.topologySpreadConstraints }}
      topologySpreadConstraints:
        {{- range . }}
        - {{ toYaml (merge (dict) . (dict "labelSelector" (dict "matchLabels" $selector))) | indent 10 | trim }}
        {{- end }}
      {{- end }}
      containers:
        - name: {{ $component }}
          image: {{ include "restash.image" (dict "root" $root "image" $app.image) }}
          imagePullPolicy: {{ $app.image.pullPolicy }}
          ports:
            {{- if .api }}
            - name: http
              containerPort: {{ $app.containerPorts.http }}
              protocol: TCP
            {{- end }}
            - name: management
              containerPort: {{ $app.containerPorts.management }}
              protocol: TCP
          env:
            {{- include "restash.env.platform" $root | nindent 12 }}
            - name: HOST
              value: "0.0.0.0"
            {{- if .api }}
            - name: PORT
              value: {{ $app.containerPorts.http | toString | quote }}
            {{- end }}
            - name: MANAGEMENT_PORT
              value: {{ $app.containerPorts.management | toString | quote }}
            {{- with .env }}
            {{- . | nindent 12 }}
            {{- end }}
            {{- with (include "restash.env.config" $app.config | trim) }}
            {{- . | nindent 12 }}
            {{- end }}
            {{- with $app.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- if and .api $app.drainSeconds }}
          # Keeps serving, every answer closing its connection, while the endpoint leaves the Services: SIGTERM comes after.
          lifecycle:
            preStop:
              httpGet: { path: "/drain?seconds={{ $app.drainSeconds }}", port: management }
          {{- end }}
          {{- with $app.startupProbe }}
          {{- if .enabled }}
          startupProbe:
            httpGet: { path: /healthz, port: management }
            {{- toYaml (omit . "enabled") | nindent 12 }}
          {{- end }}
          {{- end }}
          {{- with $app.livenessProbe }}
          {{- if .enabled }}
          livenessProbe:
            httpGet: { path: /healthz, port: management }
            {{- toYaml (omit . "enabled") | nindent 12 }}
          {{- end }}
          {{- end }}
          {{- with $app.readinessProbe }}
          {{- if .enabled }}
          readinessProbe:
            httpGet: { path: /readyz, port: management }
            {{- toYaml (omit . "enabled") | nindent 12 }}
          {{- end }}
          {{- end }}
          resources:
            {{- toYaml $app.resources | nindent 12 }}
          securityContext:
            {{- toYaml $app.containerSecurityContext | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: {{ $app.tmpSizeLimit }}
{{- end -}}

{{- define "restash.serviceAccount" -}}
{{- $apps := include "restash.apps" .root | fromYaml -}}
{{- $ctx := dict "root" .root "component" (.component | default (index $apps .key)) -}}
{{- $app := index .root.Values .key -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "restash.componentName" $ctx }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "restash.labels" $ctx | nindent 4 }}
  {{- with (include "restash.annotations" (dict "root" .root "extra" $app.serviceAccount.annotations)) }}
  annotations:
    {{- . | nindent 4 }}
  {{- end }}
automountServiceAccountToken: false
{{- end -}}

{{- define "restash.service" -}}
{{- $apps := include "restash.apps" .root | fromYaml -}}
{{- $ctx := dict "root" .root "component" (.component | default (index $apps .key)) -}}
{{- $app := index .root.Values .key -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "restash.componentName" $ctx }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "restash.labels" $ctx | nindent 4 }}
  {{- with (include "restash.annotations" (dict "root" .root "extra" $app.service.annotations)) }}
  annotations:
    {{- . | nindent 4 }}
  {{- end }}
spec:
  type: {{ $app.service.type }}
  {{- if and .api $app.service.sessionAffinity (ne $app.service.sessionAffinity "None") }}
  sessionAffinity: {{ $app.service.sessionAffinity }}
  {{- with $app.service.sessionAffinityTimeoutSeconds }}
  sessionAffinityConfig:
    clientIP:
      timeoutSeconds: {{ . }}
  {{- end }}
  {{- end }}
  selector:
    {{- include "restash.selectorLabels" $ctx | nindent 4 }}
  ports:
    {{- if .api }}
    - name: http
      port: {{ $app.service.ports.http }}
      targetPort: http
      protocol: TCP
    {{- end }}
    - name: management
      port: {{ $app.service.ports.management }}
      targetPort: management
      protocol: TCP
{{- end -}}

{{- define "restash.pdb" -}}
{{- $apps := include "restash.apps" .root | fromYaml -}}
{{- $ctx := dict "root" .root "component" (.component | default (index $apps .key)) -}}
{{- $pdb := (index .root.Values .key).podDisruptionBudget -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "restash.componentName" $ctx }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "restash.labels" $ctx | nindent 4 }}
spec:
  {{- if not (or (kindIs "invalid" $pdb.minAvailable) (eq (toString $pdb.minAvailable) "")) }}
  minAvailable: {{ $pdb.minAvailable }}
  {{- else }}
  maxUnavailable: {{ $pdb.maxUnavailable }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "restash.selectorLabels" $ctx | nindent 6 }}
{{- end -}}

{{/* Deployment, ServiceAccount, Service and PodDisruptionBudget of one app, when enabled. Context as above. */}}
{{- define "restash.app" -}}
{{- $app := index .root.Values .key -}}
{{- if $app.enabled }}
---
{{ include "restash.serviceAccount" . }}
---
{{ include "restash.service" . }}
---
{{ include "restash.deployment" . }}
{{- if $app.podDisruptionBudget.enabled }}
---
{{ include "restash.pdb" . }}
{{- end }}
{{- end }}
{{- end -}}
