package localcluster

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const contextName = "dbpilot-local"

func serverURL(host string, port int) string { return fmt.Sprintf("https://%s:%d", host, port) }

// adminRESTConfig reaches the API server with the admin client certificate.
func adminRESTConfig(certs pki, host string, port int) *rest.Config {
	return &rest.Config{
		Host: serverURL(host, port),
		TLSClientConfig: rest.TLSClientConfig{
			CAFile:   certs.caCert(),
			CertFile: certs.adminCert(),
			KeyFile:  certs.adminKey(),
		},
		QPS:   100,
		Burst: 200,
	}
}

// writeKubeconfig writes a self-contained kubeconfig for the administrator.
func writeKubeconfig(path string, certs pki, host string, port int) error {
	return writeClientKubeconfig(path, certs, host, port, certs.adminCert(), certs.adminKey())
}

// writeClientKubeconfig writes a self-contained kubeconfig (certificates
// embedded) for a client certificate, so it keeps working when copied.
func writeClientKubeconfig(path string, certs pki, host string, port int, certPath, keyPath string) error {
	ca, err := os.ReadFile(certs.caCert())
	if err != nil {
		return fmt.Errorf("reading CA: %w", err)
	}
	cert, err := os.ReadFile(certPath)
	if err != nil {
		return fmt.Errorf("reading client certificate: %w", err)
	}
	key, err := os.ReadFile(keyPath)
	if err != nil {
		return fmt.Errorf("reading client key: %w", err)
	}
	config := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{contextName: {Server: serverURL(host, port), CertificateAuthorityData: ca}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{contextName: {ClientCertificateData: cert, ClientKeyData: key}},
		Contexts:       map[string]*clientcmdapi.Context{contextName: {Cluster: contextName, AuthInfo: contextName}},
		CurrentContext: contextName,
	}
	if err := clientcmd.WriteToFile(config, path); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}
