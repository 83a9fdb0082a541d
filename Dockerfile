# syntax=docker/dockerfile:1
# One image for every Magnetar role; the role is the first argument:
#   docker run magnetar:dev standalone | broker | bookie | proxy | autorecovery | cluster ...
#   docker run --entrypoint magnetar-operator magnetar:dev --liveness-port=8080
# Build (Docker with BuildKit):   docker build -t magnetar:dev .          (or `make image`)
# The replication audit's image:   docker build --target audit -t magnetar-audit:dev .
#   (the audit extra, a Java 17 runtime, and an entrypoint that speaks Spark's Kubernetes
#   container contract: `driver ...` / `executor`, else `magnetar ...`; docs/audit.md)
#
# No HEALTHCHECK: each role has its own health endpoint, and Kubernetes ignores HEALTHCHECK.
# Probe per role (docs/kubernetes.md): broker and standalone GET :8080/admin/v2/brokers/health,
# bookie GET :8000/api/v1/bookie/is_ready, proxy GET :8080/status.html, autorecovery
# GET :8000/api/v1/autorecovery/is_ready, operator GET :8080/healthz (--liveness-port).

# Both stages share Debian bookworm's Python 3.11 in /usr/local, so the venv built in the first
# runs in the second; only the builder has compilers (for a dependency without a wheel, and for
# the modules that setup.py compiles with mypyc: the final stage gets the built extensions in the
# venv, never the compiler or the generated C). --build-arg MAGNETAR_PURE_PYTHON=1 skips mypyc.
ARG BUILDER_IMAGE=python:3.11-bookworm
ARG RUNTIME_IMAGE=python:3.11-slim-bookworm

# ---------------------------------------------------------------- builder: a complete venv
FROM ${BUILDER_IMAGE} AS builder
ARG EXTRAS=operator
ARG MAGNETAR_PURE_PYTHON=
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
RUN python -m venv /opt/magnetar
COPY . .
# A regular (not editable) install: the final stage copies the venv, never the source tree.
# The check after it imports the codec, compiled unless MAGNETAR_PURE_PYTHON is set.
RUN MAGNETAR_PURE_PYTHON="${MAGNETAR_PURE_PYTHON}" /opt/magnetar/bin/pip install ".[${EXTRAS}]" \
    && /opt/magnetar/bin/magnetar --help > /dev/null \
    && /opt/magnetar/bin/python -c "import magnetar.protocol.frame as f; print(f.__file__)"

# ---------------------------------------------------------------- audit: `--target audit` only
# A venv with the audit extra (PySpark, pyarrow), then the runtime with a Java 17 runtime. The
# default build skips both stages (BuildKit builds only what the final stage needs).
FROM builder AS audit-venv
RUN /opt/magnetar/bin/pip install ".[operator,audit]" \
    && /opt/magnetar/bin/python -c "import pyspark, magnetar.audit.container"

FROM ${RUNTIME_IMAGE} AS audit
LABEL org.opencontainers.image.title="magnetar-audit" \
      org.opencontainers.image.description="Magnetar with its PySpark replication audits, for Spark on Kubernetes" \
      org.opencontainers.image.licenses="Apache-2.0"
# Debian bookworm's OpenJDK 17 (pinned: a security update replaces the version; bump it then).
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless=17.0.15+6-1~deb12u1 \
    && rm -rf /var/lib/apt/lists/*
ENV PATH=/opt/magnetar/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PYSPARK_PYTHON=/opt/magnetar/bin/python
RUN groupadd --gid 10001 magnetar \
    && useradd --uid 10001 --gid magnetar --home-dir /var/lib/magnetar --create-home \
       --shell /usr/sbin/nologin magnetar
COPY --from=audit-venv /opt/magnetar /opt/magnetar
USER 10001:10001
WORKDIR /var/lib/magnetar
ENTRYPOINT ["python", "-m", "magnetar.audit.container"]
CMD ["audit", "--help"]

# ---------------------------------------------------------------- final: python and the venv
FROM ${RUNTIME_IMAGE}
LABEL org.opencontainers.image.title="magnetar" \
      org.opencontainers.image.description="Magnetar, a Pulsar-compatible messaging platform: every role in one image" \
      org.opencontainers.image.licenses="Apache-2.0" \
      dev.magnetar.roles="standalone broker bookie proxy autorecovery cluster"
ENV PATH=/opt/magnetar/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# Every role listens on all of the container's interfaces: its loopback (the processes'
# default) is out of reach of `docker run -p` and of other pods. A flag still overrides this.
ENV MAGNETAR_STANDALONE_BIND_ADDRESS=0.0.0.0 \
    MAGNETAR_BROKER_BIND_ADDRESS=0.0.0.0 \
    MAGNETAR_BOOKIE_BIND_ADDRESS=0.0.0.0 \
    MAGNETAR_PROXY_BIND_ADDRESS=0.0.0.0 \
    MAGNETAR_AUTORECOVERY_BIND_ADDRESS=0.0.0.0
RUN groupadd --gid 10001 magnetar \
    && useradd --uid 10001 --gid magnetar --home-dir /var/lib/magnetar --create-home \
       --shell /usr/sbin/nologin magnetar
COPY --from=builder /opt/magnetar /opt/magnetar
USER 10001:10001
WORKDIR /var/lib/magnetar
# 6650 Pulsar binary protocol, 8080 admin REST + /metrics (broker, proxy, standalone; the
# operator's health probe), 3181 bookie gRPC, 8000 bookie and autorecovery HTTP.
EXPOSE 6650 8080 3181 8000
ENTRYPOINT ["magnetar"]
CMD ["standalone"]
