# Citation highlight service. Build: docker build -t highlight-service .
#
# Every package comes from requirements.lock (exact versions and the hashes of their files;
# scripts/lock.sh writes it), so two builds of one commit install the same code.
#
# `serve` does not migrate in this image (HIGHLIGHT_MIGRATE_ON_START=false: replicas starting
# together would race). Run the migrations once per release, first:
#   docker run --rm -e HIGHLIGHT_DATABASE_URL=... highlight-service highlight-service migrate
#   docker run -d -p 8000:8000 -e HIGHLIGHT_DATABASE_URL=... highlight-service
# docker-compose.yml (a one-shot `migrate` service) and scripts/deploy/kubernetes (a Job) do so.
FROM python:3.11-slim

# Tesseract reads scanned pages (HIGHLIGHT_OCR_MODE, HIGHLIGHT_OCR_LANGUAGES): English, French,
# German and Chinese (Traditional, Simplified), and osd, which turns sideways scans upright.
# LibreOffice headless converts Office files to PDF (docs/office.md); the -nogui packages leave
# out the desktop. util-linux's unshare gives each conversion no network where the runtime
# permits user namespaces. tini is PID 1: it reaps what LibreOffice leaves when a conversion
# is killed (soffice.bin orphaned by its killed launcher), and passes signals on.
RUN apt-get update \
    && apt-get install -y --no-install-recommends tesseract-ocr tesseract-ocr-eng \
       tesseract-ocr-osd tesseract-ocr-fra tesseract-ocr-deu tesseract-ocr-chi-tra \
       tesseract-ocr-chi-sim \
       libreoffice-writer-nogui libreoffice-impress-nogui libreoffice-calc-nogui \
       fonts-dejavu-core tini \
    && rm -rf /var/lib/apt/lists/*

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HIGHLIGHT_DATABASE_URL=sqlite+aiosqlite:////data/highlight.db \
    HIGHLIGHT_PDF_ROOT=/data/pdfs \
    HIGHLIGHT_INDEX_CACHE_DIR=/data/index-cache \
    HIGHLIGHT_STORAGE_CACHE_DIR=/data/storage-cache \
    HIGHLIGHT_MIGRATE_ON_START=false \
    HIGHLIGHT_LOG_FORMAT=json

WORKDIR /srv
# The lock alone first: this layer is rebuilt only when the dependencies change.
COPY requirements.lock ./
RUN pip install --no-deps -r requirements.lock
COPY pyproject.toml README.md ./
COPY app ./app
COPY migrations ./migrations
# Editable install keeps migrations/ beside app/, where `highlight-service migrate` finds them.
# --no-deps: everything came from the lock; --no-build-isolation: the locked setuptools builds
# it, so nothing unpinned is fetched. Compiled here because the root filesystem is read-only in
# Kubernetes (and PYTHONDONTWRITEBYTECODE): otherwise every start recompiles app/ in memory.
RUN pip install --no-deps --no-build-isolation -e . \
    && python -m compileall -q app migrations \
    && groupadd --system --gid 10001 highlight \
    && useradd --system --uid 10001 --gid 10001 --home-dir /srv highlight \
    && mkdir -p /data/pdfs && chown -R 10001:10001 /data

# Numeric, so Kubernetes' runAsNonRoot can verify it without reading /etc/passwd.
USER 10001:10001
VOLUME ["/data"]
EXPOSE 8000
# /readyz, not /livez: Docker never restarts an unhealthy container (outside Swarm), it reports
# it, and what compose's `service_healthy` and a load balancer reading Docker's status need is
# "can serve" (database reachable and migrated, storage reachable). Kubernetes ignores this line
# and probes /livez for liveness, /readyz for readiness (scripts/deploy/kubernetes).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s \
  CMD python -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/readyz', timeout=4).status != 200)"
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["highlight-service", "serve", "--host", "0.0.0.0", "--port", "8000"]
