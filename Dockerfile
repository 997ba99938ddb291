# syntax=docker/dockerfile:1
# bazinga serve: the GitHub App. A static Go binary (go-git, no git CLI, no
# cgo) on distroless/static: CA certificates and a nonroot user, no shell.
# Expected size: about 15 MB — the stripped, trimmed binary (12.8 MB with
# CGO_ENABLED=0 -ldflags "-s -w": go-github, go-git and its crypto) plus
# distroless/static-debian12 (~2 MB: CA certificates, tzdata, passwd).

FROM golang:1.26-alpine AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION}" -o /out/bazinga ./cmd/bazinga
# /data, owned by nonroot, so a volume mounted there takes the credentials file
# that serve's setup page writes.
RUN mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/bazinga /bazinga
COPY --from=build --chown=65532:65532 /out/data /data
USER nonroot:nonroot
EXPOSE 8080
ENV BAZINGA_LISTEN=:8080 BAZINGA_CREDENTIALS_FILE=/data/bazinga-app.env
ENTRYPOINT ["/bazinga", "serve"]
