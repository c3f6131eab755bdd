# One image for every Jet process on Kubernetes:
#   member        jet member ...                     (the default entrypoint runs `jet`)
#   Spark driver  jet spark-source ... / jet spark-sink ...
#   Spark executor  started by Spark with the argument `executor` (handled by the entrypoint)
#   operator      command override: kopf run --standalone -A -m jet_operator.main
#   examples      /home/jet/examples (the working directory's examples/, data included), so every
#                 example and `jet manifest examples/...` output runs as it is in this image
# Build: docker build -t jet:dev .   (swap the base with --build-arg BASE=<image with Python 3.11>)
#        docker/build-without-daemon.sh [tag]   (no Docker daemon: buildah + mmdebstrap)
ARG BASE=python:3.11-slim-bookworm

# ---- build: the virtualenv (every dependency ships a wheel and pyspark is pure Python, so no
# compiler is needed; the build stage keeps pip's work out of the runtime image) -------------
FROM ${BASE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY docker/constraints.txt ./constraints.txt
COPY member ./member
COPY operator ./operator
# The constraints pin what pip would pick, so it does not search releases (minutes) to get there.
RUN python -m venv /opt/jet \
 && /opt/jet/bin/pip install --no-cache-dir --upgrade pip \
 && /opt/jet/bin/pip install --no-cache-dir -c constraints.txt ".[spark,operator,kafka,postgres]"

# ---- runtime: Python, a headless JRE for PySpark, the virtualenv, a non-root user ------------
FROM ${BASE} AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/* \
 && ln -s "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" /opt/java \
 && groupadd --gid 10001 jet \
 && useradd --uid 10001 --gid 10001 --home-dir /home/jet --create-home --shell /usr/sbin/nologin jet
COPY --from=build /opt/jet /opt/jet
COPY --chmod=0755 docker/entrypoint.sh /usr/local/bin/jet-entrypoint
COPY examples /home/jet/examples
ENV PATH=/opt/jet/bin:$PATH \
    JAVA_HOME=/opt/java \
    SPARK_HOME=/opt/jet/lib/python3.11/site-packages/pyspark \
    PYSPARK_PYTHON=/opt/jet/bin/python \
    PYTHONHASHSEED=0 \
    PYTHONUNBUFFERED=1 \
    HOME=/home/jet
USER 10001:10001
WORKDIR /home/jet
EXPOSE 5701 8080
ENTRYPOINT ["jet-entrypoint"]
CMD ["--help"]
