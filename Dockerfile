# benchwatch: the nightly loop (scheduler) and the on-call web app in one process.
# Build: docker compose build   (see docker-compose.yml and "Deploy on a team box" in README.md)
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    BENCHWATCH_HOME=/app \
    BENCHWATCH_WEB_HOST=0.0.0.0 \
    BENCHWATCH_WEB_PORT=8080 \
    BENCHWATCH_HELION_REPO=/srv/helion

# git: the culprit search reads the local Helion clone (first-parent log, files at a sha).
RUN apt-get update \
    && apt-get install -y --no-install-recommends git ca-certificates \
    && rm -rf /var/lib/apt/lists/*

# A fixed, unprivileged user; the Helion clone lives on a volume it owns.
RUN groupadd --system --gid 10001 benchwatch \
    && useradd --system --uid 10001 --gid benchwatch --home-dir /home/benchwatch --create-home benchwatch \
    && mkdir -p /srv/helion /app/var \
    && chown benchwatch:benchwatch /srv/helion /app/var \
    && git config --system --add safe.directory /srv/helion

WORKDIR /app
COPY pyproject.toml README.md ./
COPY service ./service
RUN pip install . && rm -rf build *.egg-info
# Read from BENCHWATCH_HOME at run time; after the install, so an upgrade that only adds a
# migration or changes a default rebuilds in seconds.
COPY config ./config
COPY migrations ./migrations

USER benchwatch
EXPOSE 8080
VOLUME ["/srv/helion"]

# /healthz answers 200 when the store is reachable.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c 'import os, urllib.request; urllib.request.urlopen("http://127.0.0.1:%s/healthz" % os.environ.get("BENCHWATCH_WEB_PORT", "8080"), timeout=4)'

# Every benchwatch command upgrades the schema on start (Alembic), so this also migrates.
CMD ["benchwatch", "serve", "--host", "0.0.0.0"]
