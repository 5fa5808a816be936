package desired

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
)

// ExternalServices are the Services spec.expose asks for, by name, and
// nil for each one it does not (which must not exist): the primary's and
// the replicas' (of pods pods, as ReadOnlyService), with the engine's port
// alone.
func ExternalServices(db *dbpilotv1alpha1.Database, pods int32) map[string]*corev1ac.ServiceApplyConfiguration {
	var readWrite, readOnly *dbpilotv1alpha1.ExposedService
	if e := db.Spec.Expose; e != nil {
		readWrite, readOnly = e.ReadWrite, e.ReadOnly
	}
	return map[string]*corev1ac.ServiceApplyConfiguration{
		db.ReadWriteExternalServiceName(): externalService(db, db.ReadWriteExternalServiceName(), dbpilotv1alpha1.RolePrimary, readWrite),
		db.ReadOnlyExternalServiceName():  externalService(db, db.ReadOnlyExternalServiceName(), readOnlyRole(pods), readOnly),
	}
}

// externalService is the Service name exposing the pods of role as spec
// says; nil without spec.
func externalService(db *dbpilotv1alpha1.Database, name, role string, spec *dbpilotv1alpha1.ExposedService) *corev1ac.ServiceApplyConfiguration {
	if spec == nil {
		return nil
	}
	service := corev1ac.Service(name, db.Namespace).
		WithLabels(db.CommonLabels()).
		WithOwnerReferences(ownerReference(db))
	if len(spec.Annotations) > 0 {
		service = service.WithAnnotations(plainStrings(spec.Annotations))
	}
	serviceSpec := corev1ac.ServiceSpec().
		WithType(spec.Type).
		WithSelector(withRole(db, role)).
		WithPorts(servicePort(db))
	if len(spec.LoadBalancerSourceRanges) > 0 {
		serviceSpec = serviceSpec.WithLoadBalancerSourceRanges(spec.LoadBalancerSourceRanges...)
	}
	return service.WithSpec(serviceSpec)
}
