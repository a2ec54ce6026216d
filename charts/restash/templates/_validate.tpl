{{/*
Cross-field checks values.schema.json cannot express. Every problem is collected, then `fail` reports them all at
once (as the apps report every bad variable at once). Rendered by validate.yaml.
*/}}
{{- define "restash.validateValues" -}}
{{- $problems := list -}}
{{- $v := .Values -}}
{{- if and (not $v.controlRedis.url) (not $v.controlRedis.existingSecret) -}}
{{- $problems = append $problems "controlRedis: no control Redis: set controlRedis.url (redis://...) or controlRedis.existingSecret (a Secret holding the URL)" -}}
{{- end -}}
{{- if and $v.controlRedis.url $v.controlRedis.existingSecret -}}
{{- $problems = append $problems "controlRedis: set controlRedis.url or controlRedis.existingSecret, not both" -}}
{{- end -}}
{{- if and $v.queueStore.redis.url $v.queueStore.redis.existingSecret -}}
{{- $problems = append $problems "queueStore.redis: set queueStore.redis.url or queueStore.redis.existingSecret, not both (or neither: the control Redis)" -}}
{{- end -}}
{{- $serverNames := list "main" -}}
{{- range $i, $server := $v.queueStore.servers -}}
{{- if not (regexMatch "^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$" ($server.name | default "" | toString)) -}}
{{- $problems = append $problems (printf "queueStore.servers[%d].name: lower-case letters, digits and -, at most 32" $i) -}}
{{- else if has $server.name $serverNames -}}
{{- $problems = append $problems (printf "queueStore.servers[%d].name: %s is used twice (main is queueStore.redis)" $i $server.name) -}}
{{- end -}}
{{- $serverNames = append $serverNames ($server.name | default "" | toString) -}}
{{- if or (and $server.url $server.existingSecret) (not (or $server.url $server.existingSecret)) -}}
{{- $problems = append $problems (printf "queueStore.servers[%d]: set url or existingSecret, one of them" $i) -}}
{{- end -}}
{{- end -}}
{{- if and (not $v.registrySealKey.existingSecret) (not $v.registrySealKey.generate) -}}
{{- $problems = append $problems "registrySealKey: no registry seal key: set registrySealKey.existingSecret (a Secret with 32 random bytes in base64, e.g. openssl rand -base64 32) or registrySealKey.generate=true" -}}
{{- end -}}
{{- if $v.operator.enabled -}}
{{- range $api, $key := dict "kv" "kvGateway" "vector" "vectorGateway" "stream" "streamGateway" "queue" "queueGateway" -}}
{{- if and (not (index $v $key).enabled) (not (index $v.operator.gatewayUrls $api)) -}}
{{- $problems = append $problems (printf "operator.gatewayUrls.%s: %s is disabled, so the operator needs the URL of that gateway" $api $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and $v.queueWorker.enabled (not $v.queueGateway.enabled) -}}
{{- $problems = append $problems "queueWorker: delivers what queue-gateway stores: enable queueGateway too, or disable queueWorker" -}}
{{- end -}}
{{- if and $v.metrics.prometheusRule.enabled (not ($.Files.Get "files/prometheus-rules.yaml")) -}}
{{- $problems = append $problems "metrics.prometheusRule: files/prometheus-rules.yaml is missing from the chart" -}}
{{- end -}}
{{- if $problems -}}
{{- fail (printf "\n\nrestash: invalid values:\n  - %s" (join "\n  - " $problems)) -}}
{{- end -}}
{{- end -}}
