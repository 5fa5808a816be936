# The operator image: static manager and instance-program binaries on
# distroless, running as the unprivileged user 65532. Built where a container
# engine exists:
#   make docker-build IMG=quay.io/you/dbpilot:v0.1.0
FROM docker.io/library/golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH

WORKDIR /workspace
# Dependencies first, so a source change does not re-download them.
COPY go.mod go.sum ./
RUN go mod download

COPY cmd/ cmd/
COPY api/ api/
COPY controllers/ controllers/
COPY internal/ internal/
COPY instance/ instance/
COPY autopilot/ autopilot/

RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o manager ./cmd && \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o instance ./cmd/instance

FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/manager .
# The instance program: an init container of every database pod copies it
# from this image into the pod.
COPY --from=builder /workspace/instance .
USER 65532:65532

ENTRYPOINT ["/manager"]
