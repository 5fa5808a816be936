package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

func TestExternalEndpointSaysWhereClientsOutsideTheClusterConnect(t *testing.T) {
	service := func(kind corev1.ServiceType, nodePort int32, ingress ...corev1.LoadBalancerIngress) *corev1.Service {
		s := &corev1.Service{Spec: corev1.ServiceSpec{Type: kind, Ports: []corev1.ServicePort{{Port: 5432, NodePort: nodePort}}}}
		s.Name = "db-rw-external"
		s.Status.LoadBalancer.Ingress = ingress
		return s
	}
	endpoint := func(kind corev1.ServiceType, address string, nodePort int32) *dbpilotv1alpha1.ExternalEndpoint {
		return &dbpilotv1alpha1.ExternalEndpoint{Service: "db-rw-external", Type: kind, Address: address, NodePort: nodePort}
	}
	lb, np := corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort
	cases := []struct {
		name    string
		service *corev1.Service
		want    *dbpilotv1alpha1.ExternalEndpoint
	}{
		{"a load balancer's address", service(lb, 31000, corev1.LoadBalancerIngress{IP: "203.0.113.10"}), endpoint(lb, "203.0.113.10:5432", 31000)},
		{"a load balancer known by name", service(lb, 31000, corev1.LoadBalancerIngress{Hostname: "db.elb.example.com"}), endpoint(lb, "db.elb.example.com:5432", 31000)},
		{"an IPv6 load balancer", service(lb, 0, corev1.LoadBalancerIngress{IP: "2001:db8::10"}, corev1.LoadBalancerIngress{IP: "203.0.113.10"}), endpoint(lb, "[2001:db8::10]:5432", 0)},
		{"a load balancer pending", service(lb, 31000), endpoint(lb, "", 31000)},
		{"a node port", service(np, 31001), endpoint(np, "", 31001)},
		{"a node port keeps no stale address", service(np, 31001, corev1.LoadBalancerIngress{IP: "203.0.113.10"}), endpoint(np, "", 31001)},
		{"no Service", nil, nil},
	}
	for _, tc := range cases {
		got := externalEndpoint(tc.service)
		if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
