package controllers

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/pki"
)

// instanceTarget is how the operator reaches one pod's instance program.
type instanceTarget struct {
	// base is scheme://address:port.
	base   string
	client *http.Client
}

// instanceTargetOf reaches the pod's instance program over HTTPS,
// verifying it against the Database's authority (authorityPEM, as the
// server certificate Secret carries it) for the headless Service's name,
// when its template says it serves the certificate (the annotation: the
// cache keeps a pod's metadata, not its volumes); over HTTP when it does
// not (a pod from before dbpilot issued certificates).
func instanceTargetOf(db *dbpilotv1alpha1.Database, authorityPEM []byte, pod *corev1.Pod) instanceTarget {
	address := net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(layout.ProbePort))
	if pod.Annotations[desired.AnnotationInstanceTLS] != "true" {
		return instanceTarget{base: "http://" + address, client: http.DefaultClient}
	}
	return instanceTarget{base: "https://" + address,
		client: instanceTransports.client(client.ObjectKeyFromObject(db), authorityPEM, db.ServiceHost(db.HeadlessServiceName()))}
}

// instanceAuthority is the authority's certificate the Database's server
// certificate Secret carries; nil while there is none.
func instanceAuthority(ctx context.Context, c client.Client, db *dbpilotv1alpha1.Database) ([]byte, error) {
	secret := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.ServerCertificateSecretName()}, secret)
	if err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return secret.Data[layout.KeyCACert], nil
}

// instanceTransports keeps one HTTPS client per Database, so connections
// to its instance programs are reused; a new authority replaces it.
var instanceTransports = &transportCache{clients: map[types.NamespacedName]authorityClient{}}

type transportCache struct {
	mu      sync.Mutex
	clients map[types.NamespacedName]authorityClient
}

type authorityClient struct {
	authority []byte
	client    *http.Client
}

// client is the Database's HTTPS client for authorityPEM. One that does
// not parse trusts nothing: every request fails.
func (c *transportCache) client(db types.NamespacedName, authorityPEM []byte, serverName string) *http.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cached, ok := c.clients[db]; ok && bytes.Equal(cached.authority, authorityPEM) {
		return cached.client
	}
	if cached, ok := c.clients[db]; ok {
		cached.client.CloseIdleConnections()
	}
	config, err := pki.VerifyingConfig(authorityPEM, serverName)
	if err != nil {
		config = &tls.Config{RootCAs: x509.NewCertPool(), ServerName: serverName, MinVersion: tls.VersionTLS12}
	}
	transport := &http.Transport{
		TLSClientConfig:     config,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 5 * time.Second,
	}
	cached := authorityClient{authority: bytes.Clone(authorityPEM), client: &http.Client{Transport: transport}}
	c.clients[db] = cached
	return cached.client
}

// forget drops a deleted Database's client.
func (c *transportCache) forget(db types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cached, ok := c.clients[db]; ok {
		cached.client.CloseIdleConnections()
		delete(c.clients, db)
	}
}
