# Citation highlight service. Build: docker build -t highlight-service .
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    HIGHLIGHT_DATABASE_URL=sqlite+aiosqlite:////data/highlight.db \
    HIGHLIGHT_PDF_ROOT=/data/pdfs \
    HIGHLIGHT_INDEX_CACHE_DIR=/data/index-cache

WORKDIR /srv
COPY pyproject.toml README.md ./
COPY app ./app
COPY migrations ./migrations
# Editable install keeps migrations/ beside app/, where `highlight-service migrate` finds them.
RUN pip install -e . \
    && useradd --system --uid 10001 --home-dir /srv highlight \
    && mkdir -p /data/pdfs && chown -R highlight /data

USER highlight
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s \
  CMD python -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz').status != 200)"
# `serve` runs the Alembic migrations first; pass --no-migrate when a release job does that.
CMD ["highlight-service", "serve", "--host", "0.0.0.0", "--port", "8000"]
