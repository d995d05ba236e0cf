# The image the Helm chart (helm/gitkrm) runs: gitkrm on Python 3.11 with git, ssh and gpg
# (signature checks), as a non-root user. Build: docker build -t gitkrm:0.1.0 .
# It was not built where the chart was written (no Docker there): see docs/deploy.md.
FROM python:3.11-slim

RUN apt-get update \
    && apt-get install -y --no-install-recommends git openssh-client gnupg ca-certificates \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY pyproject.toml README.md ./
COPY gitkrm ./gitkrm
RUN pip install --no-cache-dir ".[helm]" && rm -rf /src

# The uid/gid the chart's securityContext names (runAsUser/runAsGroup/fsGroup 10001).
RUN groupadd --gid 10001 gitkrm \
    && useradd --uid 10001 --gid 10001 --home-dir /var/lib/gitkrm --no-create-home \
        --shell /usr/sbin/nologin gitkrm \
    && mkdir -p /var/lib/gitkrm && chown 10001:10001 /var/lib/gitkrm

# The root filesystem is read-only in the chart: git and gitkrm write to /tmp and the state
# dir only (both volumes there).
ENV HOME=/tmp \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
WORKDIR /var/lib/gitkrm
USER 10001:10001

EXPOSE 8080 6443
ENTRYPOINT ["gitkrm"]
CMD ["--help"]
