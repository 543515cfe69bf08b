{{/*
Names, labels and the values every template shares.
*/}}

{{/* The chart name, overridable. */}}
{{- define "satpage.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The resource name prefix: release-chart, or the release name alone when it
already contains the chart name. Truncated at 63 characters (DNS label limit).
The satellite pods are <fullname>-<index>: satpage.validate checks that the
names stay within Kubernetes' limits.
*/}}
{{- define "satpage.fullname" -}}
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

{{/* Chart name and version for the helm.sh/chart label. */}}
{{- define "satpage.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Common labels. */}}
{{- define "satpage.labels" -}}
helm.sh/chart: {{ include "satpage.chart" . }}
{{ include "satpage.selectorLabels" . }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: satpage
{{- end }}

{{/* Selector labels (immutable once deployed: no version in them). */}}
{{- define "satpage.selectorLabels" -}}
app.kubernetes.io/name: {{ include "satpage.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The satellites' selector: selectorLabels plus the component. */}}
{{- define "satpage.satellite.selectorLabels" -}}
{{ include "satpage.selectorLabels" . }}
app.kubernetes.io/component: satellite
{{- end }}

{{/* The gateway's selector. */}}
{{- define "satpage.gateway.selectorLabels" -}}
{{ include "satpage.selectorLabels" . }}
app.kubernetes.io/component: gateway
{{- end }}

{{/* Headless Service of the satellites: its pod names are the ISL peers. */}}
{{- define "satpage.headlessName" -}}
{{- printf "%s-headless" (include "satpage.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "satpage.gatewayName" -}}
{{- printf "%s-gateway" (include "satpage.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "satpage.configName" -}}
{{- printf "%s-config" (include "satpage.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The ServiceAccount the pods run as. */}}
{{- define "satpage.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "satpage.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
Parse the constellation spec (Walker notation, docs/conventions.md):
walker:T/P/F:ALT_KM:INC_DEG or walker-star:T/P/F:ALT_KM:INC_DEG.
Returns the satellite count T; fails, naming the value, when the spec does not
parse or is inconsistent, so nothing is deployed half-way. The schema checks the
shape; this checks what a pattern cannot (P divides T, F < P).
*/}}
{{- define "satpage.satellites" -}}
{{- $spec := .Values.constellation.spec | toString }}
{{- if not (regexMatch "^walker(-star)?:[0-9]+/[0-9]+/[0-9]+:[0-9]+(\\.[0-9]+)?:[0-9]+(\\.[0-9]+)?$" $spec) }}
{{- fail (printf "constellation.spec %q does not parse: want walker:T/P/F:ALT_KM:INC_DEG or walker-star:T/P/F:ALT_KM:INC_DEG, e.g. walker-star:150/10/1:500:87" $spec) }}
{{- end }}
{{- $tpf := splitList "/" (index (splitList ":" $spec) 1) }}
{{- $t := index $tpf 0 | atoi }}
{{- $p := index $tpf 1 | atoi }}
{{- $f := index $tpf 2 | atoi }}
{{- if or (lt $t 1) (lt $p 1) }}
{{- fail (printf "constellation.spec %q: T=%d satellites in P=%d planes, both must be at least 1" $spec $t $p) }}
{{- end }}
{{- if ne (mod $t $p) 0 }}
{{- fail (printf "constellation.spec %q: T=%d satellites do not divide into P=%d planes" $spec $t $p) }}
{{- end }}
{{- if ge $f $p }}
{{- fail (printf "constellation.spec %q: phasing F=%d must be less than P=%d" $spec $f $p) }}
{{- end }}
{{- /* The same limits as orbit_model.parse_walker_spec. */}}
{{- $alt := index (splitList ":" $spec) 2 | float64 }}
{{- if lt $alt 150.0 }}
{{- fail (printf "constellation.spec %q: altitude %v km is below 150 km" $spec $alt) }}
{{- end }}
{{- $inc := index (splitList ":" $spec) 3 | float64 }}
{{- if gt $inc 180.0 }}
{{- fail (printf "constellation.spec %q: inclination %v deg is outside 0-180 deg" $spec $inc) }}
{{- end }}
{{- $t }}
{{- end }}

{{/* Image reference: repository:tag, tag defaulting to the chart's appVersion. */}}
{{- define "satpage.image" -}}
{{- printf "%s:%s" .image.repository (default .root.Chart.AppVersion .image.tag | toString) }}
{{- end }}

{{/*
Pull policy: as given, else Never for images under the local satpage.local/
prefix (they exist only where they were imported; a pull can only fail) and
IfNotPresent for anything from a registry.
*/}}
{{- define "satpage.pullPolicy" -}}
{{- if .pullPolicy }}
{{- .pullPolicy }}
{{- else if hasPrefix "satpage.local/" .repository }}
{{- "Never" }}
{{- else }}
{{- "IfNotPresent" }}
{{- end }}
{{- end }}

{{/* gRPC address template of satellite {index}: its stable name under the headless Service,
fully qualified (a trailing dot): one DNS question per lookup, where the short name is asked under
each search domain in turn until one answers, and under every one of them (then as it is) while
the pod has no address yet: about four times the questions for a peer not up yet. */}}
{{- define "satpage.peerTemplate" -}}
{{- printf "%s-{index}.%s.%s.svc.%s.:%d" (include "satpage.fullname" .) (include "satpage.headlessName" .) .Release.Namespace .Values.clusterDomain (int .Values.satnode.grpcPort) }}
{{- end }}

{{/* Prometheus scrape annotations for a daemon's metrics port. */}}
{{- define "satpage.prometheusAnnotations" -}}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .port | quote }}
prometheus.io/path: "/metrics"
{{- end }}

{{/* Checks that span several values; called once from the StatefulSet. */}}
{{- define "satpage.validate" -}}
{{- $t := include "satpage.satellites" . | int }}
{{- $full := include "satpage.fullname" . }}
{{- if gt (len $full) 52 }}
{{- fail (printf "name %q is longer than 52 characters (the StatefulSet's controller-revision-hash label would pass 63): shorten the release name or set fullnameOverride" $full) }}
{{- end }}
{{- $longest := printf "%s-%d" (include "satpage.fullname" .) (sub $t 1) }}
{{- if gt (len $longest) 63 }}
{{- fail (printf "pod name %q is longer than 63 characters: shorten the release name or set fullnameOverride" $longest) }}
{{- end }}
{{- if eq (int .Values.satnode.grpcPort) (int .Values.satnode.metricsPort) }}
{{- fail (printf "satnode.grpcPort and satnode.metricsPort are both %d" (int .Values.satnode.grpcPort)) }}
{{- end }}
{{- if and (include "satpage.signer" .) (not .Values.gateway.enabled) }}
{{- fail "tls.source \"helm\" (generated material) needs gateway.enabled: the gateway signs the satellites' certificates; bring tls.existingSecret or use cert-manager without a gateway" }}
{{- end }}
{{- if and (eq .Values.satnode.store "redis") (not .Values.redis.enabled) }}
{{- fail "satnode.store is \"redis\" but redis.enabled is false: enable the Redis sidecar or use store \"memory\"" }}
{{- end }}
{{- end }}

{{/*
The Redis container of a satellite pod (its page frames). It listens on the pod's
loopback only: no other pod can reach another satellite's frames, and for the same
reason it has no network probe (kubelet probes the pod IP); satnode's health covers
its store. In-memory only, `noeviction`: a full store refuses writes, never drops a page.
*/}}
{{- define "satpage.redisContainer" -}}
{{- $v := .root.Values -}}
- name: redis
  image: {{ include "satpage.image" (dict "image" $v.redis.image "root" .root) | quote }}
  imagePullPolicy: {{ include "satpage.pullPolicy" $v.redis.image }}
  {{- if .native }}
  restartPolicy: Always
  {{- else if and $v.redis.stopDelaySeconds (semverCompare ">=1.30.0-0" .root.Capabilities.KubeVersion.Version) }}
  # Stopped with satnode, not after it: serve its in-flight calls a little longer.
  lifecycle:
    preStop:
      sleep:
        seconds: {{ $v.redis.stopDelaySeconds }}
  {{- end }}
  args:
    - --bind
    - 127.0.0.1
    - --port
    - {{ $v.redis.port | quote }}
    - --protected-mode
    - "yes"
    - --save
    - ""
    - --appendonly
    - "no"
    - --dir
    - /data
    - --maxmemory
    - {{ $v.redis.maxmemory | quote }}
    - --maxmemory-policy
    - noeviction
    # Its timers 1/s, not 10/s: nothing here expires, and at the default 150
    # idle Redis used 0.15 of a core (2 of 2,000 ticks each in 20 s).
    - --hz
    - "1"
  resources:
    {{- toYaml $v.redis.resources | nindent 4 }}
  securityContext:
    {{- toYaml $v.securityContext | nindent 4 }}
  volumeMounts:
    - name: redis-data
      mountPath: /data
{{- end }}

{{/*
TLS material (docs/security.md): every pod gets its own files and no one else's.
With the chart's generated material (tls.source helm) a satellite makes its own
private key at start, in its satnode process, and gets its certificate from the
gateway's signer (satpage.signer): it proves its pod with a projected token whose
audience is the signer's, and it keeps the pair in an in-memory emptyDir of its
pod. The chart makes Secrets for the roles that have no signer to ask,
<fullname>-<role> (gateway, client, token, and ca: the CA's key, for the signer),
in cert-manager's layout (type kubernetes.io/tls: tls.crt, tls.key, ca.crt), and
the CA certificate in a ConfigMap, <fullname>-ca.
With cert-manager or tls.existingSecret there is a Secret per satellite. A
StatefulSet has one pod template, so no volume can pick satellite i's Secret: a
satellite's init step (`satnode fetch-tls`) reads it from the API, with a
ServiceAccount token mounted into that step alone, into the in-memory emptyDir.
Whatever kubelet mounts is projected item by item: the gateway gets its pair, the
CA, the token keys and (generated material) the CA's key; satellites the CA and
the token verification key (a certificate: its public key only); the test pod the CA.
*/}}

{{/* "true" when satellites get their certificates from the gateway's signer:
TLS on, with the chart's generated material. */}}
{{- define "satpage.signer" -}}
{{- if and .Values.tls.enabled (eq (include "satpage.tlsSource" .) "helm") }}true{{ end }}
{{- end }}

{{- define "satpage.signerName" -}}
{{- printf "%s-signer" (include "satpage.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The gateway's ServiceAccount: its own when it hosts the signer (the only
account that may review tokens), else the pods' shared one. */}}
{{- define "satpage.gatewayServiceAccountName" -}}
{{- if and (include "satpage.signer" .) .Values.serviceAccount.create }}
{{- include "satpage.gatewayName" . }}
{{- else }}
{{- include "satpage.serviceAccountName" . }}
{{- end }}
{{- end }}

{{/* The audience of the satellites' signer tokens: the API server refuses a
token of this audience, and the signer refuses every other. */}}
{{- define "satpage.signerAudience" -}}
satpage-signer
{{- end }}

{{/* The Secret a user brings (tls.existingSecret), in the one-directory layout. */}}
{{- define "satpage.tlsSecretName" -}}
{{- .Values.tls.existingSecret }}
{{- end }}

{{/* Where the daemons read the TLS material (not /etc/satpage: the ISL schedule is mounted there). */}}
{{- define "satpage.tlsDir" -}}
/etc/satpage-tls
{{- end }}

{{/* Where a satellite reads the token verification key: beside its TLS
directory, which its init step writes (`SATPAGE_TOKEN_VERIFY_KEYS`). */}}
{{- define "satpage.tokenDir" -}}
/etc/satpage-token
{{- end }}

{{/* Where the TLS material comes from: "secret" (tls.existingSecret),
"cert-manager" or "helm" (generated). */}}
{{- define "satpage.tlsSource" -}}
{{- if .Values.tls.existingSecret }}secret
{{- else if eq .Values.tls.source "cert-manager" }}cert-manager
{{- else if and (eq .Values.tls.source "auto") (.Capabilities.APIVersions.Has "cert-manager.io/v1") }}cert-manager
{{- else }}helm
{{- end }}
{{- end }}

{{/* The Secret a satellite's init step reads, "{index}" standing for its index. */}}
{{- define "satpage.satelliteSecret" -}}
{{- if eq (include "satpage.tlsSource" .) "secret" }}
{{- include "satpage.tlsSecretName" . }}
{{- else }}
{{- printf "%s-sat-{index}" (include "satpage.fullname" .) }}
{{- end }}
{{- end }}

{{/* Checksum of the TLS material: pods roll when it changes (generated, or the
user's or cert-manager's Secrets as the cluster holds them; names when they cannot be read). */}}
{{- define "satpage.tlsChecksum" -}}
{{- if eq (include "satpage.tlsSource" .) "cert-manager" }}
{{- $full := include "satpage.fullname" . }}
{{- $all := list }}
{{- range $n := list "ca" "gateway" "token" "sat-0" }}
{{- $s := lookup "v1" "Secret" $.Release.Namespace (printf "%s-%s" $full $n) }}
{{- $all = append $all (dig "data" (dict) (default (dict) $s)) }}
{{- end }}
{{- $all | toJson | sha256sum }}
{{- else if .Values.tls.existingSecret }}
{{- $s := lookup "v1" "Secret" .Release.Namespace .Values.tls.existingSecret }}
{{- if $s }}{{ $s.data | toJson | sha256sum }}{{ else }}{{ .Values.tls.existingSecret | sha256sum }}{{ end }}
{{- else }}
{{- include "satpage.tlsData" . | sha256sum }}
{{- end }}
{{- end }}

{{/* The TLS volumes of a pod (role: satellite, gateway or test); see the top of
this section for what each holds. */}}
{{- define "satpage.tlsVolumes" -}}
{{- $root := .root }}
{{- $full := include "satpage.fullname" $root }}
{{- $own := ne (include "satpage.tlsSource" $root) "secret" }}
{{- $user := include "satpage.tlsSecretName" $root }}
{{- if eq .role "satellite" }}
- name: tls
  emptyDir:
    medium: Memory
    sizeLimit: 1Mi
- name: token-verify
  projected:
    defaultMode: 0440
    sources:
      - secret:
          name: {{ ternary (printf "%s-token" $full) $user $own }}
          items: [{key: {{ ternary "tls.crt" "token-verify-keys.pem" $own }}, path: token-verify-keys.pem}]
{{- if include "satpage.signer" $root }}
# What satnode asks the signer with: a token only the signer accepts (the API
# server refuses its audience), bound to this pod, and the CA the signer's
# certificate chains to.
- name: signer-token
  projected:
    defaultMode: 0440
    sources:
      - serviceAccountToken:
          path: token
          audience: {{ include "satpage.signerAudience" $root }}
          expirationSeconds: 600
- name: ca
  configMap:
    name: {{ $full }}-ca
    items: [{key: ca.pem, path: ca.pem}]
{{- else }}
# The init step's API credentials (what automountServiceAccountToken would give
# every container), mounted into that step alone.
{{- include "satpage.kubeApiVolume" $root | nindent 0 }}
{{- end }}
{{- else }}
- name: tls
  projected:
    defaultMode: 0440
    sources:
      {{- if and $own (eq .role "gateway") }}
      - secret:
          name: {{ $full }}-gateway
          items: [{key: ca.crt, path: ca.pem}, {key: tls.crt, path: gateway.pem}, {key: tls.key, path: gateway-key.pem}]
      - secret:
          name: {{ $full }}-token
          items: [{key: tls.key, path: token-signing-key.pem}, {key: tls.crt, path: token-verify-keys.pem}]
      {{- if include "satpage.signer" $root }}
      - secret:
          name: {{ $full }}-ca
          items: [{key: tls.key, path: ca-key.pem}]
      {{- end }}
      {{- else if $own }}
      - secret:
          name: {{ $full }}-client
          items: [{key: ca.crt, path: ca.pem}]
      {{- else }}
      - secret:
          name: {{ $user }}
          items:
            - {key: ca.pem, path: ca.pem}
            {{- if eq .role "gateway" }}
            {{- range $f := list "gateway.pem" "gateway-key.pem" "token-signing-key.pem" "token-verify-keys.pem" }}
            - {key: {{ $f }}, path: {{ $f }}}
            {{- end }}
            {{- end }}
      {{- end }}
{{- end }}
{{- end }}

{{/* API credentials projected into one container (what automountServiceAccountToken
would give every container): the token, the API server's CA and the namespace. */}}
{{- define "satpage.kubeApiVolume" -}}
- name: kube-api
  projected:
    defaultMode: 0440
    sources:
      - serviceAccountToken:
          path: token
          expirationSeconds: 600
      - configMap:
          name: kube-root-ca.crt
          items: [{key: ca.crt, path: ca.crt}]
      - downwardAPI:
          items: [{path: namespace, fieldRef: {fieldPath: metadata.namespace}}]
{{- end }}

{{- define "satpage.kubeApiMount" -}}
- name: kube-api
  mountPath: /var/run/secrets/kubernetes.io/serviceaccount
  readOnly: true
{{- end }}

{{- define "satpage.tlsMount" -}}
- name: tls
  mountPath: {{ include "satpage.tlsDir" . }}
  readOnly: true
{{- end }}

{{/* A satellite pod's init step: `satnode fetch-tls` writes its certificate, key
and the CA from its own Secret into the "tls" emptyDir (podkeys in services/). */}}
{{- define "satpage.fetchTlsContainer" -}}
{{- $v := .Values -}}
{{- $own := ne (include "satpage.tlsSource" .) "secret" -}}
- name: fetch-tls
  image: {{ include "satpage.image" (dict "image" $v.satnode.image "root" .) | quote }}
  imagePullPolicy: {{ include "satpage.pullPolicy" $v.satnode.image }}
  args:
    - fetch-tls
    - --secret={{ include "satpage.satelliteSecret" . }}
    - --out={{ include "satpage.tlsDir" . }}
    - --file={{ ternary "tls.crt" "satellite-{index}.pem" $own }}=satellite-{index}.pem
    - --file={{ ternary "tls.key" "satellite-{index}-key.pem" $own }}=satellite-{index}-key.pem
    - --file={{ ternary "ca.crt" "ca.pem" $own }}=ca.pem
  resources:
    {{- toYaml $v.satnode.resources | nindent 4 }}
  securityContext:
    {{- toYaml $v.securityContext | nindent 4 }}
  volumeMounts:
    - name: tls
      mountPath: {{ include "satpage.tlsDir" . }}
    {{- include "satpage.kubeApiMount" . | nindent 4 }}
{{- end }}

{{/* The generated TLS material, made once per render and cached in .Values (the
Secrets and the pods' checksum see the same keys): a dict from Secret name to its
data. The Secrets of the same release are kept when all of them exist (lookup), so
an upgrade does not re-key the constellation. */}}
{{- define "satpage.tlsData" -}}
{{- if not (hasKey .Values.tls "_data") }}
{{- $full := include "satpage.fullname" . }}
{{- $gw := include "satpage.gatewayName" . }}
{{- $ns := .Release.Namespace }}
{{- $days := int .Values.tls.generatedDays }}
{{- $names := list (printf "%s-gateway" $full) (printf "%s-client" $full) (printf "%s-token" $full) (printf "%s-ca" $full) }}
{{- $kept := dict }}
{{- range $n := $names }}
{{- $old := lookup "v1" "Secret" $ns $n }}
{{- if and $old $old.data (hasKey $old.data "tls.crt") (hasKey $old.data "tls.key") }}
{{- $_ := set $kept $n $old.data }}
{{- end }}
{{- end }}
{{- $data := dict }}
{{- if eq (len $kept) (len $names) }}
{{- $data = $kept }}
{{- else }}
{{- /* An ECDSA CA: the signer signs 150 certificates at install. The satellites'
certificates are not made here: each satellite makes its own key (satpage.signer). */}}
{{- $ca := genCAWithKey "satpage constellation CA" $days (genPrivateKey "ecdsa") }}
{{- $caPem := $ca.Cert | b64enc }}
{{- $_ := set $data (printf "%s-ca" $full) (dict "tls.crt" $caPem "tls.key" ($ca.Key | b64enc) "ca.crt" $caPem) }}
{{- $g := genSignedCertWithKey "gateway.satpage" nil (list "gateway.satpage" $gw (printf "%s.%s.svc" $gw $ns) "localhost") $days $ca (genPrivateKey "ecdsa") }}
{{- $_ := set $data (printf "%s-gateway" $full) (dict "tls.crt" ($g.Cert | b64enc) "tls.key" ($g.Key | b64enc) "ca.crt" $caPem) }}
{{- $c := genSignedCertWithKey "client.satpage" nil (list "client.satpage") $days $ca (genPrivateKey "ecdsa") }}
{{- $_ := set $data (printf "%s-client" $full) (dict "tls.crt" ($c.Cert | b64enc) "tls.key" ($c.Key | b64enc) "ca.crt" $caPem) }}
{{- /* The token key: Ed25519 (PKCS#8). Helm cannot print its public key, but it
can put it in a certificate, which is what satellites verify with (token.LoadVerifyKeys
takes a certificate's key; its validity and issuer do not matter). */}}
{{- $tok := genPrivateKey "ed25519" }}
{{- $tc := genSelfSignedCertWithKey "satpage session tokens" nil nil $days $tok }}
{{- $_ := set $data (printf "%s-token" $full) (dict "tls.crt" ($tc.Cert | b64enc) "tls.key" ($tok | b64enc) "ca.crt" $caPem) }}
{{- end }}
{{- $_ := set .Values.tls "_data" $data }}
{{- end }}
{{- toYaml (get .Values.tls "_data") }}
{{- end }}

{{/*
The file whose positions time the links (docs/emulation.md), as the daemons see it;
empty when links are not emulated or no positions are given. It is mounted beside
/etc/satpage (not inside it: that may be the ISL schedule's read-only volume).
*/}}
{{- define "satpage.linkEphemeris" -}}
{{- if and .Values.links.emulate (or .Values.live.enabled .Values.links.configMap) -}}
/etc/satpage-links/link-ephemeris.bin
{{- end -}}
{{- end }}

{{/*
The links volume's mount and volume, for satnode and the gateway: in live mode the
live ephemeris (the clock's epoch is the links' time 0), else links.configMap's file.
*/}}
{{- define "satpage.linksMount" -}}
- name: links
  mountPath: /etc/satpage-links
  readOnly: true
{{- end }}
{{- define "satpage.linksVolume" -}}
- name: links
  configMap:
    {{- if .Values.live.enabled }}
    name: {{ include "satpage.configName" . }}-ephemeris
    items:
      - key: ephemeris.bin
        path: link-ephemeris.bin
    {{- else }}
    name: {{ .Values.links.configMap }}
    items:
      - key: link-ephemeris.bin
        path: link-ephemeris.bin
    {{- end }}
{{- end }}

{{/* The deployment generation (docs/faults.md, "First start and restart"):
satnode.generation, else the one this release's ConfigMap holds (an upgrade keeps
it: a rolled pod restores from its peers' copies), else a new random one at install.
Made once per render and cached in .Values (the ConfigMap and the pods' checksum
see the same). */}}
{{- define "satpage.generation" -}}
{{- if not (hasKey .Values.satnode "_generation") }}
{{- $g := .Values.satnode.generation }}
{{- if not $g }}
{{- $old := lookup "v1" "ConfigMap" .Release.Namespace (include "satpage.configName" .) }}
{{- if and $old $old.data }}
{{- $g = index $old.data "SATPAGE_GENERATION" | default "" }}
{{- end }}
{{- end }}
{{- $_ := set .Values.satnode "_generation" ($g | default (randAlphaNum 12 | lower)) }}
{{- end }}
{{- .Values.satnode._generation }}
{{- end }}
