package instance

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/util/cert"

	"github.com/dbpilot/dbpilot/instance/layout"
)

// MetricsEndpoint configures the engine metrics server.
type MetricsEndpoint struct {
	// Address is where the metrics are served over HTTPS; "": not served.
	Address string
	// TokenFile holds the bearer token a scraper must present, read at
	// every request (a rotated Secret applies without a restart); while it
	// is missing or empty, every request is refused.
	TokenFile string
	// DataDir is on the data volume whose usage is reported.
	DataDir string
}

// startMetrics serves the engine metrics over HTTPS with a self-signed
// certificate made at start (Prometheus scrapes pods by IP, so no name
// could be verified anyway; the token authenticates the scraper, TLS keeps
// it and the series private on the wire).
func startMetrics(endpoint MetricsEndpoint, probes *probeServer) (stop func(), err error) {
	if endpoint.Address == "" {
		return func() {}, nil
	}
	host, _ := os.Hostname()
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("metrics server certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("metrics server certificate: %w", err)
	}
	registry := prometheus.NewRegistry()
	if err := registry.Register(&metricsCollector{probes: probes, dataDir: endpoint.DataDir}); err != nil {
		return nil, err
	}
	token := func() string {
		data, err := os.ReadFile(endpoint.TokenFile)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(data))
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+layout.MetricsPath, RequireToken(token,
		promhttp.HandlerFor(registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, Timeout: metricsTimeout + time.Second})))
	listener, err := net.Listen("tcp", endpoint.Address)
	if err != nil {
		return nil, fmt.Errorf("metrics server: %w", err)
	}
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}}
	go func() { _ = server.ServeTLS(listener, "", "") }()
	return func() { _ = server.Close() }, nil
}
