// Package pkitest builds certificates the end-to-end suites put in place
// of dbpilot's, with code of its own rather than the pki package's.
package pkitest

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"math/big"
	"time"
)

// ExpiringCopy is the authority's certificate (certPEM) issued again by
// its own key (keyPEM, PKCS #8), the same in all but its serial number and
// its expiry: notAfter. dbpilot's authorities look so in their last year.
func ExpiringCopy(certPEM, keyPEM []byte, notAfter time.Time) ([]byte, error) {
	certBlock, _ := pem.Decode(certPEM)
	keyBlock, _ := pem.Decode(keyPEM)
	if certBlock == nil || keyBlock == nil {
		return nil, errors.New("the certificate or its key is not PEM")
	}
	cert, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParsePKCS8PrivateKey(keyBlock.Bytes)
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, errors.New("the key cannot sign")
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	template := *cert
	template.SerialNumber, template.NotAfter = serial, notAfter
	der, err := x509.CreateCertificate(rand.Reader, &template, &template, signer.Public(), signer)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
