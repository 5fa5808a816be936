package desired

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// portName is the name of the engine's client port on pods and Services.
const portName = "db"

func servicePort(db *dbpilotv1alpha1.Database) *corev1ac.ServicePortApplyConfiguration {
	profile, _ := db.Spec.Engine.Profile()
	return corev1ac.ServicePort().
		WithName(portName).
		WithProtocol(corev1.ProtocolTCP).
		WithPort(profile.Port).
		WithTargetPort(intstr.FromString(portName))
}

func withRole(db *dbpilotv1alpha1.Database, role string) map[string]string {
	selector := db.SelectorLabels()
	selector[dbpilotv1alpha1.LabelRole] = role
	return selector
}

// HeadlessService governs the StatefulSet: it gives each pod a stable DNS
// name (<pod>.<name>-headless) that replicas use to reach the primary. It
// publishes pods before they are ready so a replica can find the primary
// while both start.
func HeadlessService(db *dbpilotv1alpha1.Database) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(db.HeadlessServiceName(), db.Namespace).
		WithLabels(db.CommonLabels()).
		WithOwnerReferences(ownerReference(db)).
		WithSpec(corev1ac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithPublishNotReadyAddresses(true).
			WithSelector(db.SelectorLabels()).
			WithPorts(servicePort(db)))
}

// ReadWriteService reaches the primary only: its engine, and its instance
// program, from which a new MariaDB replica clones (authenticated with the
// replication password).
func ReadWriteService(db *dbpilotv1alpha1.Database) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(db.ReadWriteServiceName(), db.Namespace).
		WithLabels(db.CommonLabels()).
		WithOwnerReferences(ownerReference(db)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(withRole(db, dbpilotv1alpha1.RolePrimary)).
			WithPorts(servicePort(db), corev1ac.ServicePort().
				WithName(layout.ProbePortName).
				WithProtocol(corev1.ProtocolTCP).
				WithPort(layout.ProbePort).
				WithTargetPort(intstr.FromString(layout.ProbePortName))))
}

// ReadOnlyService reaches the replicas, or the primary when the Database runs
// a single pod (of pods, the StatefulSet's replicas), so read-only clients
// always have somewhere to go.
func ReadOnlyService(db *dbpilotv1alpha1.Database, pods int32) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(db.ReadOnlyServiceName(), db.Namespace).
		WithLabels(db.CommonLabels()).
		WithOwnerReferences(ownerReference(db)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(withRole(db, readOnlyRole(pods))).
			WithPorts(servicePort(db)))
}

// readOnlyRole is the role read-only clients reach among pods pods: the
// replicas, or the primary while it is alone.
func readOnlyRole(pods int32) string {
	if pods < 2 {
		return dbpilotv1alpha1.RolePrimary
	}
	return dbpilotv1alpha1.RoleReplica
}
