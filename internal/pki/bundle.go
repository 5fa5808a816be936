package pki

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
)

// bundleCertificates are the DER certificates of a PEM bundle, in order;
// blocks of other types are skipped.
func bundleCertificates(bundle []byte) [][]byte {
	var ders [][]byte
	for {
		var block *pem.Block
		block, bundle = pem.Decode(bundle)
		if block == nil {
			return ders
		}
		if block.Type == "CERTIFICATE" {
			ders = append(ders, block.Bytes)
		}
	}
}

// BundleContains reports whether every certificate of part is in bundle.
func BundleContains(bundle, part []byte) bool {
	have := bundleCertificates(bundle)
	for _, der := range bundleCertificates(part) {
		if !slices.ContainsFunc(have, func(h []byte) bool { return bytes.Equal(h, der) }) {
			return false
		}
	}
	return true
}

// JoinBundles is bundle a followed by the certificates of b that a lacks:
// a itself when it has them all.
func JoinBundles(a, b []byte) []byte {
	if BundleContains(a, b) {
		return a
	}
	joined := slices.Clone(a)
	if len(joined) > 0 && joined[len(joined)-1] != '\n' {
		joined = append(joined, '\n')
	}
	have := bundleCertificates(a)
	for _, der := range bundleCertificates(b) {
		if slices.ContainsFunc(have, func(h []byte) bool { return bytes.Equal(h, der) }) {
			continue
		}
		have = append(have, der)
		joined = append(joined, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	return joined
}

// LeafCertificate is the DER of a PEM bundle's first certificate (a served
// chain's leaf), nil without one.
func LeafCertificate(bundle []byte) []byte {
	if ders := bundleCertificates(bundle); len(ders) > 0 {
		return ders[0]
	}
	return nil
}

// parseLeaf parses a PEM bundle's first certificate.
func parseLeaf(bundle []byte) (*x509.Certificate, error) {
	der := LeafCertificate(bundle)
	if der == nil {
		return nil, errors.New("no PEM certificate")
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the certificate: %w", err)
	}
	return cert, nil
}
