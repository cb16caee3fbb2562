# The emulator as an image: the README's install and start commands, run as a non-root user.
# tests/emulator/test_docker.py holds the two together, and runs this start command and HEALTHCHECK.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY emulator emulator
COPY conformance conformance
COPY replay replay
COPY o41 o41
RUN python3 -m venv .venv && .venv/bin/pip install --no-cache-dir .
RUN useradd --create-home --uid 10041 o41 && mkdir /data && chown o41 /data
ENV PATH=/app/.venv/bin:$PATH
USER o41
EXPOSE 8041
VOLUME ["/data"]
HEALTHCHECK --interval=5s --timeout=2s --start-period=5s --retries=3 \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8041/_emulator/health', timeout=2)"
# 0.0.0.0 is the only way to be reached through a published port, and the image cannot know
# who reaches that port: it accepts the risk of open admin endpoints explicitly. Publish on
# loopback (`-p 127.0.0.1:8041:8041`, as docker-compose.yml does) or set
# O41_EMULATOR_SERVE_ADMIN_KEY (docs/emulator.md, "Browsers and the network").
ENTRYPOINT ["o41-emulator", "serve", "--host", "0.0.0.0", "--port", "8041", "--data-dir", "/data", "--allow-unauthenticated-admin"]
