package cluster

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const contextName = "dbpilot-local"

func serverURL(port int) string { return fmt.Sprintf("https://127.0.0.1:%d", port) }

// adminRESTConfig reaches the API server with the admin client certificate.
func adminRESTConfig(certs pki, port int) *rest.Config {
	return &rest.Config{
		Host: serverURL(port),
		TLSClientConfig: rest.TLSClientConfig{
			CAFile:   certs.caCert(),
			CertFile: certs.adminCert(),
			KeyFile:  certs.adminKey(),
		},
		QPS:   100,
		Burst: 200,
	}
}

// writeKubeconfig writes a self-contained kubeconfig (certificates embedded),
// so it keeps working when copied elsewhere.
func writeKubeconfig(path string, certs pki, port int) error {
	ca, err := os.ReadFile(certs.caCert())
	if err != nil {
		return fmt.Errorf("reading CA: %w", err)
	}
	cert, err := os.ReadFile(certs.adminCert())
	if err != nil {
		return fmt.Errorf("reading admin certificate: %w", err)
	}
	key, err := os.ReadFile(certs.adminKey())
	if err != nil {
		return fmt.Errorf("reading admin key: %w", err)
	}
	config := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{contextName: {Server: serverURL(port), CertificateAuthorityData: ca}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{contextName: {ClientCertificateData: cert, ClientKeyData: key}},
		Contexts:       map[string]*clientcmdapi.Context{contextName: {Cluster: contextName, AuthInfo: contextName}},
		CurrentContext: contextName,
	}
	if err := clientcmd.WriteToFile(config, path); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}
