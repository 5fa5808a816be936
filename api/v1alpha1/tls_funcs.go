package v1alpha1

import "slices"

// CertificateAuthoritySecretName is the Secret of the Database's own
// certificate authority, which dbpilot generates: its ca.crt is what clients
// verify the Database's servers with.
func (d *Database) CertificateAuthoritySecretName() string { return d.Name + "-ca" }

// ServerCertificateSecretName is the Secret (type kubernetes.io/tls) of the
// certificate every pod of the Database serves: signed by its authority and
// renewed by dbpilot before it expires, or copied from the user's
// (ProvidedServerCertificateSecretName).
func (d *Database) ServerCertificateSecretName() string { return d.Name + "-tls" }

// ClientAuthoritySecretName is the Secret of the authority of the
// Database's client certificates, which dbpilot generates: the engines
// trust its ca.crt for client certificates.
func (d *Database) ClientAuthoritySecretName() string { return d.Name + "-client-ca" }

// ApplicationCertificateSecretName is the Secret (type kubernetes.io/tls)
// of the application user's client certificate, which dbpilot issues and
// renews.
func (d *Database) ApplicationCertificateSecretName() string { return d.Name + "-app-tls" }

// ProvidedServerCertificateSecretName is the user's Secret the server
// certificate is copied from; empty when dbpilot issues it.
func (d *Database) ProvidedServerCertificateSecretName() string {
	if d.Spec.TLS == nil {
		return ""
	}
	return d.Spec.TLS.ServerCertificateSecretName
}

// ServerNames are the DNS names the server certificate carries: each
// Service's, short and qualified (the cluster domain assumed to be
// cluster.local), and every pod's through the headless Service, then
// spec.tls.serverAltNames (DNS names and IP addresses) not among them. The
// first is the certificate's common name.
func (d *Database) ServerNames() []string {
	var names []string
	for _, service := range []string{d.ReadWriteServiceName(), d.ReadOnlyServiceName(), d.HeadlessServiceName()} {
		names = append(names, service, service+"."+d.Namespace, d.ServiceHost(service), d.ServiceHost(service)+".cluster.local")
	}
	pods := "*." + d.ServiceHost(d.HeadlessServiceName())
	names = append(names, pods, pods+".cluster.local")
	if d.Spec.TLS != nil {
		for _, name := range d.Spec.TLS.ServerAltNames {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	return names
}

// RequiresTLS reports whether connections without TLS are refused.
func (d *Database) RequiresTLS() bool { return d.Spec.TLS != nil && d.Spec.TLS.Required }

// RequiresClientCertificate reports whether the application user must
// present its client certificate to log in over the network.
func (d *Database) RequiresClientCertificate() bool {
	return d.Spec.TLS != nil && d.Spec.TLS.ClientCertificateRequired
}
