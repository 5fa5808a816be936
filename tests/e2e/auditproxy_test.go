package e2e_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// auditedWrite is one write request a manager sent to the API server.
type auditedWrite struct {
	at     time.Time
	writer string // the manager process that sent it
	method string
	path   string
	status int
}

// isLease reports whether the write was to a Lease (leader election).
func (w auditedWrite) isLease() bool {
	return strings.Contains(w.path, "/leases/") || strings.HasSuffix(w.path, "/leases")
}

// succeeded reports whether the API server accepted the write.
func (w auditedWrite) succeeded() bool { return w.status >= 200 && w.status < 300 }

// writeAudit records the writes of every manager process, in the order
// the proxies received them: the test's own audit log of the API server.
type writeAudit struct {
	mu     sync.Mutex
	writes []auditedWrite
}

func (a *writeAudit) record(w auditedWrite) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.writes = append(a.writes, w)
}

// all returns the writes recorded so far.
func (a *writeAudit) all() []auditedWrite {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]auditedWrite(nil), a.writes...)
}

// startAuditProxy serves the API server on 127.0.0.1 to one manager slot
// as the administrator, records its writes under writer(), and returns a
// kubeconfig file that reaches it. A manager's own requests are never
// altered.
func startAuditProxy(t testing.TB, audit *writeAudit, writer func() string) string {
	t.Helper()
	upstream, err := url.Parse(restConfig.Host)
	if err != nil {
		t.Fatalf("API server URL: %v", err)
	}
	transport, err := rest.TransportFor(restConfig)
	if err != nil {
		t.Fatalf("API server transport: %v", err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(upstream); r.Out.Host = upstream.Host },
		Transport:     transport,
		FlushInterval: -1, // watches stream
		// A killed manager cancels its requests: no log line for that.
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) },
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			proxy.ServeHTTP(w, r)
			return
		}
		write := auditedWrite{at: time.Now(), writer: writer(), method: r.Method, path: r.URL.Path}
		recorder := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		proxy.ServeHTTP(recorder, r)
		write.status = recorder.status
		audit.record(write)
	})
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	server := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(func() { _ = server.Close() })

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	content := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: audited
  cluster:
    server: http://%s
contexts:
- name: audited
  context:
    cluster: audited
    user: audited
users:
- name: audited
  user: {}
current-context: audited
`, listener.Addr())
	if err := os.WriteFile(kubeconfig, []byte(content), 0o600); err != nil {
		t.Fatalf("writing kubeconfig: %v", err)
	}
	return kubeconfig
}

// statusRecorder remembers the status code of a response.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Flush lets streamed responses through.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
