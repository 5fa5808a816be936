package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the set of keys and certificates of a local control plane, written
// as PEM files under one directory.
type pki struct {
	dir string
}

func (p pki) path(name string) string { return filepath.Join(p.dir, name) }

// CA, serving, client and service-account files.
func (p pki) caCert() string            { return p.path("ca.crt") }
func (p pki) caKey() string             { return p.path("ca.key") }
func (p pki) servingCert() string       { return p.path("apiserver.crt") }
func (p pki) servingKey() string        { return p.path("apiserver.key") }
func (p pki) adminCert() string         { return p.path("admin.crt") }
func (p pki) adminKey() string          { return p.path("admin.key") }
func (p pki) serviceAccountKey() string { return p.path("sa.key") }
func (p pki) serviceAccountPub() string { return p.path("sa.pub") }
func (p pki) nodeClientCert() string    { return p.path("node-client.crt") }
func (p pki) nodeClientKey() string     { return p.path("node-client.key") }
func (p pki) nodeServingCert() string   { return p.path("node-serving.crt") }
func (p pki) nodeServingKey() string    { return p.path("node-serving.key") }

// ensure generates every file that is missing, so a persistent control plane
// keeps its identity (and its kubeconfig stays valid) across restarts.
func (p pki) ensure() error {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return fmt.Errorf("creating PKI directory: %w", err)
	}
	if fileExists(p.caCert()) && fileExists(p.servingCert()) && fileExists(p.adminCert()) && fileExists(p.serviceAccountKey()) {
		return nil
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generating CA key: %w", err)
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "dbpilot-local-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("signing CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return fmt.Errorf("parsing CA certificate: %w", err)
	}
	if err := writeCert(p.caCert(), caDER); err != nil {
		return err
	}
	if err := writeKey(p.caKey(), caKey); err != nil {
		return err
	}

	serving := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceClusterIP), net.ParseIP(BridgeIP)},
	}
	if err := p.issue(serving, ca, caKey, p.servingCert(), p.servingKey()); err != nil {
		return err
	}
	admin := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "dbpilot-admin", Organization: []string{"system:masters"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if err := p.issue(admin, ca, caKey, p.adminCert(), p.adminKey()); err != nil {
		return err
	}

	// Service-account tokens are signed with RSA, which every client verifies.
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generating service-account key: %w", err)
	}
	if err := writeKey(p.serviceAccountKey(), saKey); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return fmt.Errorf("encoding service-account public key: %w", err)
	}
	return writePEM(p.serviceAccountPub(), "PUBLIC KEY", pub, 0o644)
}

func (p pki) issue(template, ca *x509.Certificate, caKey crypto.Signer, certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generating key for %s: %w", template.Subject.CommonName, err)
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("signing certificate for %s: %w", template.Subject.CommonName, err)
	}
	if err := writeCert(certPath, der); err != nil {
		return err
	}
	return writeKey(keyPath, key)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(fmt.Sprintf("reading random serial: %v", err))
	}
	return n
}

func writeCert(path string, der []byte) error {
	return writePEM(path, "CERTIFICATE", der, 0o644)
}

func writeKey(path string, key crypto.Signer) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding key %s: %w", path, err)
	}
	return writePEM(path, "PRIVATE KEY", der, 0o600)
}

func writePEM(path, blockType string, der []byte, mode os.FileMode) error {
	data := pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der})
	if err := os.WriteFile(path, data, mode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// ensureNode issues the real node's certificates when missing: a client
// certificate the Node authorizer recognises (system:node:NAME in
// system:nodes) and the kubelet's serving certificate for its address.
func (p pki) ensureNode(node, ip string) error {
	if fileExists(p.nodeClientCert()) && fileExists(p.nodeServingCert()) {
		return nil
	}
	ca, caKey, err := p.loadCA()
	if err != nil {
		return err
	}
	client := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if err := p.issue(client, ca, caKey, p.nodeClientCert(), p.nodeClientKey()); err != nil {
		return err
	}
	serving := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: node},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{node, "localhost"},
		IPAddresses:  []net.IP{net.ParseIP(ip), net.ParseIP("127.0.0.1")},
	}
	return p.issue(serving, ca, caKey, p.nodeServingCert(), p.nodeServingKey())
}

// loadCA reads the CA certificate and key ensure wrote.
func (p pki) loadCA() (*x509.Certificate, crypto.Signer, error) {
	certPEM, err := os.ReadFile(p.caCert())
	if err != nil {
		return nil, nil, fmt.Errorf("reading CA: %w", err)
	}
	keyPEM, err := os.ReadFile(p.caKey())
	if err != nil {
		return nil, nil, fmt.Errorf("reading CA key: %w", err)
	}
	certBlock, _ := pem.Decode(certPEM)
	keyBlock, _ := pem.Decode(keyPEM)
	if certBlock == nil || keyBlock == nil {
		return nil, nil, fmt.Errorf("CA files in %s are not PEM", p.dir)
	}
	ca, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing CA: %w", err)
	}
	key, err := x509.ParsePKCS8PrivateKey(keyBlock.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing CA key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("CA key in %s cannot sign", p.dir)
	}
	return ca, signer, nil
}
