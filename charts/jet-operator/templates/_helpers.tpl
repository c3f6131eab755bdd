{{/* The chart's short name. */}}
{{- define "jet-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name, used for every object of the operator. */}}
{{- define "jet-operator.fullname" -}}
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

{{- define "jet-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object of the release, without the component. */}}
{{- define "jet-operator.commonLabels" -}}
helm.sh/chart: {{ include "jet-operator.chart" . }}
app.kubernetes.io/name: {{ include "jet-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: jet
{{- end }}

{{/* Labels of the operator's own objects. */}}
{{- define "jet-operator.labels" -}}
{{ include "jet-operator.commonLabels" . }}
app.kubernetes.io/component: operator
{{- end }}

{{/* Labels that select the operator's pod. */}}
{{- define "jet-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "jet-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{/* The operator's service account. */}}
{{- define "jet-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "jet-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The service account of members and Spark drivers. */}}
{{- define "jet-operator.jobServiceAccountName" -}}
{{- default "jet-job" .Values.jobServiceAccount.name }}
{{- end }}

{{/* Namespaces that get the job service account: the watched ones, or the release's. */}}
{{- define "jet-operator.jobNamespaces" -}}
{{- if .Values.watchNamespaces }}
{{- join "," .Values.watchNamespaces }}
{{- else }}
{{- .Release.Namespace }}
{{- end }}
{{- end }}

{{/* What the operator does to a JetJob's children, in any namespace it watches.
     Spark's needs (pods, services, configmaps, PVCs) are included: a Role can only grant what
     its creator holds. */}}
{{- define "jet-operator.jobRules" -}}
- apiGroups: [jet.dev]
  resources: [jetjobs]
  verbs: [get, list, watch, patch, update]
- apiGroups: [jet.dev]
  resources: [jetjobs/status]
  verbs: [get, patch, update]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
- apiGroups: [events.k8s.io]
  resources: [events]
  verbs: [create, patch]
- apiGroups: [""]
  resources: [pods, services, configmaps, persistentvolumeclaims]
  verbs: [get, list, watch, create, update, patch, delete, deletecollection]
- apiGroups: [""]
  resources: [secrets, serviceaccounts]
  verbs: [get, create, patch, delete]
- apiGroups: [apps]
  resources: [statefulsets]
  verbs: [get, list, watch, create, patch, delete]
- apiGroups: [rbac.authorization.k8s.io]
  resources: [roles, rolebindings]
  verbs: [get, create, patch, delete]
{{- if .Values.dashboard.ingress.enabled }}
- apiGroups: [networking.k8s.io]
  resources: [ingresses]
  verbs: [get, create, patch, delete]
{{- end }}
{{- end }}

{{/* What Spark drivers need in their namespace. */}}
{{- define "jet-operator.sparkRules" -}}
- apiGroups: [""]
  resources: [pods, services, configmaps, persistentvolumeclaims]
  verbs: [get, list, watch, create, update, patch, delete, deletecollection]
{{- end }}

{{/* The Lease the operator's replicas elect a leader with. */}}
{{- define "jet-operator.leaseName" -}}
{{- .Values.leaderElection.leaseName | default (include "jet-operator.fullname" .) }}
{{- end }}
