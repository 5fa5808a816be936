package promsource

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// roundTripper adds the CA and the bearer token (re-read on every request,
// so a rotated projected token keeps working) to the default transport.
func roundTripper(opts Options) (http.RoundTripper, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if opts.CAFile != "" {
		pem, err := os.ReadFile(opts.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading Prometheus CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no certificate in Prometheus CA file %s", opts.CAFile)
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if opts.BearerTokenFile == "" {
		return transport, nil
	}
	return bearerToken{file: opts.BearerTokenFile, next: transport}, nil
}

type bearerToken struct {
	file string
	next http.RoundTripper
}

// RoundTrip sets the Authorization header from the token file.
func (b bearerToken) RoundTrip(req *http.Request) (*http.Response, error) {
	token, err := os.ReadFile(b.file)
	if err != nil {
		return nil, fmt.Errorf("reading Prometheus bearer token: %w", err)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	return b.next.RoundTrip(req)
}
