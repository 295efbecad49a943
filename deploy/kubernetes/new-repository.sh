#!/bin/sh
# new-repository.sh NAME [OFFSET_MINUTES] > memory-NAME.yaml
#
# The Kubernetes objects of one dream memory repository: its volume and its two CronJobs
# (the evening cycle at 22:OFFSET, the morning cycle at 07:OFFSET, UTC). One repository per
# agent, project or person; give each a different OFFSET so a fleet does not run (and call
# the model server) at once. memory-ana.yaml and memory-bob.yaml were written by this
# script (`sh new-repository.sh ana 0`, `sh new-repository.sh bob 10`); CI checks they
# still are, and validates them against the Kubernetes schemas. See docs/operations.md.
set -eu
usage="usage: new-repository.sh NAME [OFFSET_MINUTES]  (NAME: a DNS label such as ana; OFFSET: 0-59)"
name=${1:-}
offset=${2:-0}
case "$name" in
  '' | *[!a-z0-9-]* | -* | *-) echo "$usage" >&2; exit 2 ;;
esac
case "$offset" in
  '' | *[!0-9]*) echo "$usage" >&2; exit 2 ;;
esac
if [ "$offset" -gt 59 ]; then
  echo "$usage" >&2
  exit 2
fi

cronjob() {
  cycle=$1
  hour=$2
  cat <<YAML
---
# The $cycle cycle of $name. concurrencyPolicy Forbid is the single-writer rule at the
# scheduler's level (the repository's own lock is the rule at dream's); a run missed by up
# to six hours (a control plane down, a node drained) still starts, a later one waits for
# the next day, which loses nothing: the inbox waits.
apiVersion: batch/v1
kind: CronJob
metadata:
  name: dream-$cycle-$name
  namespace: dream
  labels:
    app.kubernetes.io/name: dream
    app.kubernetes.io/instance: $name
    app.kubernetes.io/component: $cycle
spec:
  schedule: "$offset $hour * * *"
  timeZone: Etc/UTC
  concurrencyPolicy: Forbid
  startingDeadlineSeconds: 21600
  successfulJobsHistoryLimit: 3
  failedJobsHistoryLimit: 5
  jobTemplate:
    spec:
      # A failed cycle left the repository and state as the last good one did: one retry,
      # then the next scheduled run.
      backoffLimit: 1
      activeDeadlineSeconds: 7200
      template:
        metadata:
          labels:
            app.kubernetes.io/name: dream
            app.kubernetes.io/instance: $name
            app.kubernetes.io/component: $cycle
        spec:
          restartPolicy: Never
          securityContext:
            runAsNonRoot: true
            runAsUser: 10001
            runAsGroup: 10001
            fsGroup: 10001
            seccompProfile:
              type: RuntimeDefault
          containers:
            - name: dream
              # Built from deploy/container/Containerfile and pushed to your registry.
              image: registry.example.com/dream:0.1.0
              # Creates the repository on first use; exit 10 (heartbeat warnings, in the
              # log) and 75 (lock held, nothing written) count as success.
              command: ["dream-cycle", "/data/memory", "$cycle"]
              env:
                - name: OPENAI_API_KEY
                  valueFrom:
                    secretKeyRef:
                      name: dream-openai
                      key: api-key
                # DREAM_<SECTION>_<KEY> overrides dream.toml; the model is the fleet's.
                - name: DREAM_LLM_PROVIDER
                  value: openai
                - name: DREAM_LLM_MODEL
                  value: gpt-4o-mini
                # The agents write their events to the inbox volume; dream only reads it.
                - name: DREAM_INBOX_PATH
                  value: /inbox
                # Outside the repository and the home folder: said so (inbox.allow_outside).
                - name: DREAM_INBOX_ALLOW_OUTSIDE
                  value: "true"
              # From docs/BENCHMARKS.md: the heavy cycle (10,000 new events over a
              # 100,000-event window) peaks at 182 MiB and takes 2.7 s of one core; a cycle
              # with a model mostly waits on the network. No CPU limit: throttling only
              # slows a batch job down.
              resources:
                requests:
                  cpu: 250m
                  memory: 256Mi
                limits:
                  memory: 512Mi
              securityContext:
                allowPrivilegeEscalation: false
                readOnlyRootFilesystem: true
                capabilities:
                  drop: ["ALL"]
              volumeMounts:
                - name: data
                  mountPath: /data
                - name: inbox
                  mountPath: /inbox
                  readOnly: true
                - name: tmp
                  mountPath: /tmp
          volumes:
            - name: data
              persistentVolumeClaim:
                claimName: dream-memory-$name
            - name: inbox
              persistentVolumeClaim:
                claimName: dream-inbox-$name
                readOnly: true
            - name: tmp
              emptyDir: {}
YAML
}

cat <<YAML
# The memory repository $name: written by \`sh new-repository.sh $name $offset\`.
---
# The repository (git history, memory, review cards) and its state database, written only
# by this repository's cycles: block storage of one node (ReadWriteOnce), where flock holds.
# 100,000 events take 164 MB of state (docs/BENCHMARKS.md), so 2 GiB lasts long.
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: dream-memory-$name
  namespace: dream
  labels:
    app.kubernetes.io/name: dream
    app.kubernetes.io/instance: $name
spec:
  accessModes: ["ReadWriteOnce"]
  resources:
    requests:
      storage: 2Gi
---
# The inbox: where the agents append their events (*.jsonl). Shared with them
# (ReadWriteMany, for example NFS or a CSI file share); the cycles mount it read-only and
# lock nothing on it. Drop it (and DREAM_INBOX_PATH) if the agents write into
# /data/memory/events themselves.
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: dream-inbox-$name
  namespace: dream
  labels:
    app.kubernetes.io/name: dream
    app.kubernetes.io/instance: $name
spec:
  accessModes: ["ReadWriteMany"]
  resources:
    requests:
      storage: 1Gi
YAML
cronjob evening 22
cronjob morning 7
