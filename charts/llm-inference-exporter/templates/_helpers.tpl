{{/* Labels on every object: the kustomize base's part-of label, Helm's bookkeeping, commonLabels. */}}
{{- define "lie.common" -}}
app.kubernetes.io/part-of: llm-inference-exporter
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The selector of one role; call with (dict "root" $ "role" "node"). Immutable once installed. */}}
{{- define "lie.selector" -}}
app.kubernetes.io/name: llm-exporter
app.kubernetes.io/component: {{ .role }}
{{- end }}

{{- define "lie.labels" -}}
{{ include "lie.selector" . }}
{{ include "lie.common" .root }}
{{- end }}

{{- define "lie.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* The scheme of probes and monitors: https when the web config serves TLS. */}}
{{- define "lie.scheme" -}}
{{ if and .Values.webConfig.secretName .Values.webConfig.tls }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}

{{/* Relabelings that add monitors.extraScrapeLabels to every series of a target. */}}
{{- define "lie.relabelings" -}}
{{- range $k, $v := .Values.monitors.extraScrapeLabels }}
- action: replace
  targetLabel: {{ $k }}
  replacement: {{ $v | quote }}
{{- end }}
{{- end }}

{{/* The container parts both roles share; call with (dict "root" $ "role" "node"). */}}
{{- define "lie.container" -}}
{{- $v := .root.Values -}}
image: {{ include "lie.image" .root }}
{{- with $v.image.pullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
args:
  - serve
  - --config
  - /etc/llm-exporter/config.yaml
  - --role
  - {{ .role }}
{{- if $v.webConfig.secretName }}
  - --web.config.file
  - /etc/llm-exporter-web/{{ $v.webConfig.key }}
{{- end }}
ports:
  - name: metrics
    containerPort: 8490
    protocol: TCP
livenessProbe:
  httpGet:
    path: /healthz
    port: metrics
    {{- if eq (include "lie.scheme" .root) "HTTPS" }}
    scheme: HTTPS
    {{- end }}
  periodSeconds: 20
  timeoutSeconds: 3
  failureThreshold: 3
readinessProbe:
  httpGet:
    path: /readyz
    port: metrics
    {{- if eq (include "lie.scheme" .root) "HTTPS" }}
    scheme: HTTPS
    {{- end }}
  periodSeconds: 10
  timeoutSeconds: 3
  failureThreshold: 3
securityContext:
  allowPrivilegeEscalation: false
  privileged: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: [ALL]
{{- end }}

{{/* Volume mounts both roles share (config, web config); each role adds its own and /tmp. */}}
{{- define "lie.mounts" -}}
- name: config
  mountPath: /etc/llm-exporter
  readOnly: true
{{- if .Values.webConfig.secretName }}
- name: web-config
  mountPath: /etc/llm-exporter-web
  readOnly: true
{{- end }}
{{- end }}

{{- define "lie.volumes" -}}
- name: config
  configMap:
    name: {{ .root.Values.fullname }}-{{ .role }}-config
{{- with .root.Values.webConfig.secretName }}
- name: web-config
  secret:
    secretName: {{ . }}
{{- end }}
{{- end }}

{{/* The only writable path of the read-only root filesystem. */}}
{{- define "lie.tmp" -}}
- name: tmp
  emptyDir:
    sizeLimit: 16Mi
{{- end }}

{{/* clusterLabel, checked: a label name, or "" for one cluster. */}}
{{- define "lie.clusterLabel" -}}
{{- $label := toString (.Values.clusterLabel | default "") }}
{{- if and $label (or (not (regexMatch `^[A-Za-z_][A-Za-z0-9_]*$` $label)) (hasPrefix "__" $label)) }}
{{- fail (printf "clusterLabel must be a label name (letters, digits and _, not starting with a digit or __), got %q" $label) }}
{{- end }}
{{- $label }}
{{- end }}

{{/* prometheusRule.runbookUrl, checked: the address of a hosted docs/runbook.md, or "" for the relative links. */}}
{{- define "lie.runbookUrl" -}}
{{- $url := toString (.Values.prometheusRule.runbookUrl | default "") }}
{{- /* no whitespace or '#' (the anchor is appended): the URL goes into the YAML as a plain scalar */}}
{{- if and $url (not (regexMatch `^https?://[^/?#\s]+[^#\s]*$` $url)) }}
{{- fail (printf "prometheusRule.runbookUrl must be an absolute http:// or https:// URL without a #fragment (the address of your hosted copy of docs/runbook.md), got %q" $url) }}
{{- end }}
{{- $url }}
{{- end }}
