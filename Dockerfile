# The controller image for users with Docker: `docker build -t dovetail/controller:0.1.0 .`
# It holds what `make image` builds without Docker (tools/image/build, docs/getting-started.md):
# the Debian 12 runtime libraries the binary links and nothing else (no shell, no package
# manager), the dovetail binary, run as uid 65532.

# Build: the optimised dovetail binary, then the image's file system from Debian packages.
FROM debian:12 AS build
WORKDIR /src
COPY scripts/install-deps scripts/install-deps
RUN apt-get update -qq \
 && scripts/install-deps --build-only \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null
COPY . .
RUN cmake --preset release >/dev/null \
 && cmake --build --preset release --target dovetail \
 && tools/image/build --rootfs /rootfs

# Run: nothing but that file system.
FROM scratch
COPY --from=build /rootfs/ /
USER 65532:65532
WORKDIR /
ENV PATH=/usr/local/bin:/usr/bin:/bin
ENTRYPOINT ["/usr/local/bin/dovetail"]
CMD ["controller"]
