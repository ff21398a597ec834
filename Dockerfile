# rnats in a container: `nats-server -js` with its store on a volume and a health check on
# /healthz. Build: `docker build -t rnats .`; run:
#   docker run -d -p 4222:4222 -p 8222:8222 -v rnats-data:/data rnats
# Extra flags replace the default command, e.g. `docker run rnats -js -sd /data -m 8222 -DV`.

# Build stage: the server binary only (the workspace manifests are all needed to resolve it).
FROM rust:1-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p nats-server --bin nats-server \
    && install -D -m 0755 target/release/nats-server /out/nats-server

# Final stage: the binary on a slim Debian (glibc, bash for the health check), run as an
# unprivileged user that owns the store.
FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --user-group --home-dir /data --no-create-home \
        --shell /usr/sbin/nologin nats \
    && install -d -o nats -g nats -m 0750 /data
COPY --from=build /out/nats-server /usr/local/bin/nats-server
USER nats
VOLUME ["/data"]
# clients, routes, monitoring (/healthz, /varz, /metrics), websocket (when configured)
EXPOSE 4222 6222 8222 8080
# /healthz answers 200 once the server (and JetStream) is ready; bash's /dev/tcp needs no
# curl in the image.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8222 && printf 'GET /healthz HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["/usr/local/bin/nats-server"]
CMD ["-js", "-sd", "/data", "-m", "8222"]
