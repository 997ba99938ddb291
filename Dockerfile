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

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/bazinga /bazinga
USER nonroot:nonroot
EXPOSE 8080
ENV BAZINGA_LISTEN=:8080
ENTRYPOINT ["/bazinga", "serve"]
