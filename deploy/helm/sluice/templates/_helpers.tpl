{{/* The chart name, or nameOverride. */}}
{{- define "sluice.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The resource name prefix: the release name, with the chart name unless it already contains it. */}}
{{- define "sluice.fullname" -}}
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

{{/* Labels that select the pods. */}}
{{- define "sluice.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sluice.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels of every resource. */}}
{{- define "sluice.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "sluice.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "sluice.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "sluice.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
sluice.configKey is the ConfigMap key of a file of the configuration
directory: its path with "/" written "__" (keys cannot hold "/"; the
volume's items put each key back at its path).
*/}}
{{- define "sluice.configKey" -}}
{{- replace "/" "__" . -}}
{{- end -}}

{{/*
sluice.validate fails the render on a configuration the pods could not
serve: no sluice.toml, a path that is not a plain relative path, two paths
with one key, a listen address other than all interfaces on .Values.port,
a metrics_listen other than all interfaces on .Values.metrics.port, or a
data_dir other than the mounted data volume.
*/}}
{{- define "sluice.validate" -}}
{{- $toml := index .Values.config.files "sluice.toml" -}}
{{- if not $toml -}}
{{- fail "config.files must hold sluice.toml" -}}
{{- end -}}
{{- $keys := dict -}}
{{- range $path, $_ := .Values.config.files -}}
{{- if not (regexMatch "^[A-Za-z0-9_][-A-Za-z0-9_.]*(/[A-Za-z0-9_][-A-Za-z0-9_.]*)*$" $path) -}}
{{- fail (printf "config.files: %q is not a relative path of letters, digits, '-', '_' and '.' below the configuration directory" $path) -}}
{{- end -}}
{{- $key := include "sluice.configKey" $path -}}
{{- if hasKey $keys $key -}}
{{- fail (printf "config.files: %q and %q would share the ConfigMap key %q" (get $keys $key) $path $key) -}}
{{- end -}}
{{- $_ := set $keys $key $path -}}
{{- end -}}
{{- $listen := printf "(?m)^\\s*listen\\s*=\\s*\"(0\\.0\\.0\\.0|\\[::\\])?:%d\"" (int .Values.port) -}}
{{- if not (regexMatch $listen $toml) -}}
{{- fail (printf "config.files.sluice.toml: [server] listen must be \"0.0.0.0:%d\" (or \":%d\"): the default, 127.0.0.1, is unreachable from outside the pod, and the port must be the value \"port\"" (int .Values.port) (int .Values.port)) -}}
{{- end -}}
{{- $metricsListen := printf "(?m)^\\s*metrics_listen\\s*=\\s*\"(0\\.0\\.0\\.0|\\[::\\])?:%d\"" (int .Values.metrics.port) -}}
{{- if not (regexMatch $metricsListen $toml) -}}
{{- fail (printf "config.files.sluice.toml: [server] metrics_listen must be \"0.0.0.0:%d\" (or \":%d\"): the default, 127.0.0.1:9464, is unreachable for the scrape, and the port must be the value \"metrics.port\"" (int .Values.metrics.port) (int .Values.metrics.port)) -}}
{{- end -}}
{{- $dataDir := printf "(?m)^\\s*data_dir\\s*=\\s*\"%s/?\"" (regexQuoteMeta .Values.dataDir) -}}
{{- if not (regexMatch $dataDir $toml) -}}
{{- fail (printf "config.files.sluice.toml: [store] data_dir must be %q, the data volume (the configuration directory is read-only)" .Values.dataDir) -}}
{{- end -}}
{{- end -}}
