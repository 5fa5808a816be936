// Module grpc-health-probe is a wrapper that builds a pinned tool for the local cluster's real node
// (see the Makefile); the tool directive names the program.
module github.com/dbpilot/dbpilot/hack/tools/grpc-health-probe

go 1.26.0

require (
	github.com/Microsoft/go-winio v0.6.2 // indirect
	github.com/go-jose/go-jose/v4 v4.0.5 // indirect
	github.com/grpc-ecosystem/grpc-health-probe v0.4.40 // indirect
	github.com/spiffe/go-spiffe/v2 v2.5.0 // indirect
	github.com/zeebo/errs v1.4.0 // indirect
	golang.org/x/crypto v0.38.0 // indirect
	golang.org/x/net v0.40.0 // indirect
	golang.org/x/sync v0.14.0 // indirect
	golang.org/x/sys v0.33.0 // indirect
	golang.org/x/text v0.25.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20250528174236-200df99c418a // indirect
	google.golang.org/grpc v1.74.2 // indirect
	google.golang.org/protobuf v1.36.6 // indirect
)

tool github.com/grpc-ecosystem/grpc-health-probe
