package controllers

import (
	"context"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// exposedServices reads the Services of spec.expose that the Database asks
// for and controls, by name: what status.endpoints reports of them. A
// Service not yet created, or the user's own of that name, is left out.
func (r *DatabaseReconciler) exposedServices(ctx context.Context, db *dbpilotv1alpha1.Database) (map[string]*corev1.Service, error) {
	e := db.Spec.Expose
	if e == nil {
		return nil, nil
	}
	services := map[string]*corev1.Service{}
	for name, asked := range map[string]bool{db.ReadWriteExternalServiceName(): e.ReadWrite != nil, db.ReadOnlyExternalServiceName(): e.ReadOnly != nil} {
		if !asked {
			continue
		}
		service := &corev1.Service{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: name}, service)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("reading Service %s: %w", name, err)
		}
		if metav1.IsControlledBy(service, db) {
			services[name] = service
		}
	}
	return services, nil
}

// externalEndpoint is where clients outside the cluster reach service:
// its type, node port, and the load balancer's address once it has one
// (its first IP, or its host name). Nil for no Service.
func externalEndpoint(service *corev1.Service) *dbpilotv1alpha1.ExternalEndpoint {
	if service == nil {
		return nil
	}
	endpoint := &dbpilotv1alpha1.ExternalEndpoint{Service: service.Name, Type: service.Spec.Type}
	var port int32
	if len(service.Spec.Ports) > 0 {
		port, endpoint.NodePort = service.Spec.Ports[0].Port, service.Spec.Ports[0].NodePort
	}
	if service.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return endpoint
	}
	for _, ingress := range service.Status.LoadBalancer.Ingress {
		host := ingress.IP
		if host == "" {
			host = ingress.Hostname
		}
		if host != "" {
			endpoint.Address = net.JoinHostPort(host, strconv.Itoa(int(port)))
			break
		}
	}
	return endpoint
}
