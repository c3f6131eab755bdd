#!/bin/bash
# The image's entrypoint: `jet <args>`, except for Spark executor pods, which Spark on
# Kubernetes starts with the single argument "executor" and describes in SPARK_* variables.
set -euo pipefail

if [ "${1:-}" = "executor" ]; then
  java_opts=()
  while IFS= read -r option; do
    java_opts+=("$option")
  done < <(env | grep '^SPARK_JAVA_OPT_' | sort -t_ -k4 -n | sed 's/^[^=]*=//')
  exec java "${java_opts[@]}" \
    -Xms"${SPARK_EXECUTOR_MEMORY}" -Xmx"${SPARK_EXECUTOR_MEMORY}" \
    -cp "${SPARK_HOME}/conf:${SPARK_HOME}/jars/*:${SPARK_CLASSPATH:-}" \
    org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
    --driver-url "${SPARK_DRIVER_URL}" \
    --executor-id "${SPARK_EXECUTOR_ID}" \
    --cores "${SPARK_EXECUTOR_CORES}" \
    --app-id "${SPARK_APPLICATION_ID}" \
    --hostname "${SPARK_EXECUTOR_POD_IP}" \
    --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-0}" \
    --podName "${SPARK_EXECUTOR_POD_NAME}"
fi

exec jet "$@"
