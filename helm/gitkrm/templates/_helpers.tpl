{{/* The chart's name, at most 63 characters (a label value). */}}
{{- define "gitkrm.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The prefix of every object name: the release name, with the chart name unless it
contains it already. */}}
{{- define "gitkrm.fullname" -}}
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

{{- define "gitkrm.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "gitkrm.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gitkrm.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "gitkrm.labels" -}}
helm.sh/chart: {{ include "gitkrm.chart" . }}
{{ include "gitkrm.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "gitkrm.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gitkrm.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "gitkrm.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* Where the agent keeps GitSources and inventories (gitkrm.agent.crd.NAMESPACE). */}}
{{- define "gitkrm.systemNamespace" -}}
gitkrm-system
{{- end }}

{{- define "gitkrm.leaseNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.namespace }}
{{- end }}

{{/* The agent name: the release name, never a pod name, so replicas share one Lease, one
notes ref and one status file. */}}
{{- define "gitkrm.agentName" -}}
{{- .Release.Name }}
{{- end }}

{{- define "gitkrm.gitSecretName" -}}
{{- if .Values.gitCredentials.existingSecret }}
{{- .Values.gitCredentials.existingSecret }}
{{- else if .Values.gitCredentials.create }}
{{- printf "%s-git" (include "gitkrm.fullname" .) }}
{{- end }}
{{- end }}

{{- define "gitkrm.apiSecretName" -}}
{{- default (printf "%s-api-token" (include "gitkrm.fullname" .)) .Values.api.existingSecret }}
{{- end }}

{{- define "gitkrm.port" -}}
{{- if eq .Values.mode "embedded" }}{{ .Values.ports.api }}{{ else }}{{ .Values.ports.http }}{{ end }}
{{- end }}

{{- define "gitkrm.portName" -}}
{{- if eq .Values.mode "embedded" }}https{{ else }}http{{ end }}
{{- end }}

{{/* Refusals values.schema.json can't express on its own, in words. */}}
{{- define "gitkrm.checkValues" -}}
{{- if and (eq .Values.mode "embedded") (gt (int .Values.replicaCount) 1) }}
{{- fail "replicaCount: embedded mode runs one replica (its SQLite store has one writer)" }}
{{- end }}
{{- if and (eq .Values.rbac.scope "namespaced") .Values.rbac.create (eq .Values.mode "cluster") (not .Values.rbac.namespaces) }}
{{- fail "rbac.namespaces: namespaced RBAC needs the namespaces the agent may manage" }}
{{- end }}
{{- if and .Values.gitCredentials.create (not .Values.gitCredentials.existingSecret) (not (or .Values.gitCredentials.password .Values.gitCredentials.sshPrivateKey)) }}
{{- fail "gitCredentials.create: give gitCredentials.password or gitCredentials.sshPrivateKey" }}
{{- end }}
{{- if and .Values.gitCredentials.sshPrivateKey (not .Values.gitCredentials.knownHosts) }}
{{- fail "gitCredentials.knownHosts: an SSH key needs the known_hosts of the Git host" }}
{{- end }}
{{- end }}
