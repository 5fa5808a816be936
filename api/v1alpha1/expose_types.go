package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
)

// ExposeSpec publishes the Database to clients outside the cluster, through
// Services of their own beside the in-cluster ones (<name>-rw and
// <name>-ro stay ClusterIP): only the engine's port, never the instance
// program's. The engines serve TLS with a certificate for the cluster's
// names; clients that connect by the load balancer's address verify the
// authority (sslmode=verify-ca, ssl-verify-server-cert off), or the user's
// own certificate (spec.tls.serverCertificateSecretName) carries that name.
// spec.tls.required keeps every session encrypted.
type ExposeSpec struct {
	// readWrite publishes the primary as the Service <name>-rw-external.
	// +optional
	ReadWrite *ExposedService `json:"readWrite,omitempty"`

	// readOnly publishes the replicas (the primary while there is one pod)
	// as the Service <name>-ro-external.
	// +optional
	ReadOnly *ExposedService `json:"readOnly,omitempty"`
}

// ExposedService is a Service that reaches the Database from outside the
// cluster.
// +kubebuilder:validation:XValidation:rule="!has(self.loadBalancerSourceRanges) || size(self.loadBalancerSourceRanges) == 0 || self.type == 'LoadBalancer'",message="spec.expose: loadBalancerSourceRanges goes with type LoadBalancer only"
type ExposedService struct {
	// type is LoadBalancer (the default: the cluster's load balancer gives
	// it an address) or NodePort (a port on every node).
	// +optional
	// +kubebuilder:default=LoadBalancer
	// +kubebuilder:validation:Enum=LoadBalancer;NodePort
	Type corev1.ServiceType `json:"type,omitempty"`

	// annotations go on the Service: the load balancer's settings of the
	// cluster's provider (an internal load balancer, a DNS name).
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.size() <= 317 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="spec.expose: an annotation key is an optional DNS subdomain prefix and /, then at most 63 letters, digits, -, _ and ., beginning and ending with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.matches('^([^/]*[.])?dbpilot[.]io/'))",message="spec.expose: annotation keys under dbpilot.io/ are dbpilot's own"
	Annotations map[string]AnnotationValue `json:"annotations,omitempty"`

	// loadBalancerSourceRanges, with type LoadBalancer, are the client
	// networks the load balancer admits (CIDRs: 203.0.113.0/24); every
	// network when unset, where the provider supports it.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="self.all(r, isCIDR(r))",message="spec.expose: loadBalancerSourceRanges are CIDRs, such as 203.0.113.0/24 or 2001:db8::/32"
	LoadBalancerSourceRanges []string `json:"loadBalancerSourceRanges,omitempty"`
}

// ReadWriteExternalServiceName is the Service that publishes the primary
// outside the cluster (spec.expose.readWrite).
func (d *Database) ReadWriteExternalServiceName() string { return d.Name + "-rw-external" }

// ReadOnlyExternalServiceName is the Service that publishes the replicas
// outside the cluster (spec.expose.readOnly).
func (d *Database) ReadOnlyExternalServiceName() string { return d.Name + "-ro-external" }
