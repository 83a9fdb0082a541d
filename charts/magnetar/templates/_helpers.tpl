{{/* Names and labels shared by every template. */}}

{{- define "magnetar.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name: "<release>-magnetar", or the release name when it already says magnetar. */}}
{{- define "magnetar.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "magnetar.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "magnetar.operatorName" -}}
{{- printf "%s-operator" (include "magnetar.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "magnetar.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "magnetar.selectorLabels" -}}
app.kubernetes.io/name: {{ include "magnetar.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{/* Every object's labels but the component. */}}
{{- define "magnetar.baseLabels" -}}
helm.sh/chart: {{ include "magnetar.chart" . }}
app.kubernetes.io/name: {{ include "magnetar.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: magnetar
{{- end -}}

{{/* The operator's objects. */}}
{{- define "magnetar.labels" -}}
{{ include "magnetar.baseLabels" . }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "magnetar.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "magnetar.operatorName" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "magnetar.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
