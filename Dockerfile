# syntax=docker/dockerfile:1
# The agent-sandbox-controller image (docs/install.md, "The image"):
#   docker build -t agent-sandbox-controller:dev .
# It also carries /sandbox-router, which deploy/router runs (docs/router.md).
#
# Build stage: Debian 12 with the Debian packages the controller links
# (the library half of tools/install-deps) and meson; libk8s, libsandbox and libwarmpool
# are linked statically into the one binary.
# Runtime stage: distroless cc-debian12 (glibc, libssl3, libgcc; no shell, no
# package manager), the binary and the shared libraries it needs that the
# base image lacks; runs as the non-root user 65532.
FROM debian:bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential meson ninja-build pkg-config \
      libcurl4-openssl-dev libcjson-dev libyaml-dev libmbedtls-dev libuv1-dev libhttp-parser-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY meson.build meson_options.txt ./
COPY libasb libasb
COPY libhttpd libhttpd
COPY libk8s libk8s
COPY libsandbox libsandbox
COPY libwarmpool libwarmpool
COPY cmd cmd
COPY bench bench
COPY tools/check-image-libs tools/
RUN meson setup /build --buildtype=release -Ddefault_library=static -Dtests=false \
 && meson compile -C /build cmd/controller/agent-sandbox-controller cmd/router/sandbox-router \
 && strip /build/cmd/controller/agent-sandbox-controller /build/cmd/router/sandbox-router

# The controller's shared libraries (ldd) that distroless cc-debian12 does not
# ship, by soname: libcurl and what it pulls in, cJSON, libyaml, mbedTLS,
# libuv, http-parser. tools/check-image-libs compares this list with `ldd` of
# the binary, here and in the integration tests, and fails on a missing or an
# unneeded entry.
ARG RUNTIME_LIBS="\
 libbrotlicommon.so.1 libbrotlidec.so.1 libcjson.so.1 libcom_err.so.2 libcurl.so.4\
 libffi.so.8 libgmp.so.10 libgnutls.so.30 libgssapi_krb5.so.2 libhogweed.so.6\
 libhttp_parser.so.2.9 libidn2.so.0 libk5crypto.so.3 libkeyutils.so.1 libkrb5.so.3\
 libkrb5support.so.0 liblber-2.5.so.0 libldap-2.5.so.0 libmbedcrypto.so.7\
 libmbedtls.so.14 libmbedx509.so.1 libnettle.so.8 libnghttp2.so.14 libp11-kit.so.0\
 libpsl.so.5 librtmp.so.1 libsasl2.so.2 libssh2.so.1 libtasn1.so.6 libunistring.so.2\
 libuv.so.1 libyaml-0.so.2 libz.so.1 libzstd.so.1"
RUN tools/check-image-libs /build/cmd/controller/agent-sandbox-controller \
 && tools/check-image-libs /build/cmd/router/sandbox-router \
 && arch="$(gcc -dumpmachine)" \
 && mkdir -p "/rootfs/usr/lib/$arch" \
 && for lib in $RUNTIME_LIBS; do cp -L "/usr/lib/$arch/$lib" "/rootfs/usr/lib/$arch/"; done \
 && cp /build/cmd/controller/agent-sandbox-controller /rootfs/agent-sandbox-controller \
 && cp /build/cmd/router/sandbox-router /rootfs/sandbox-router

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /rootfs/ /
USER 65532:65532
EXPOSE 8080 8081 9443
ENTRYPOINT ["/agent-sandbox-controller"]
