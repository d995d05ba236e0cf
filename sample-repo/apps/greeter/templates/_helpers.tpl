{{- define "greeter.labels" -}}
app.kubernetes.io/name: greeter
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end }}
